"""Fixtures of the Riffle tests: the vanilla-Spark oracle and a look at shuffle files on disk."""

from __future__ import annotations

import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]
SYNTHETIC_BASE = 1 << 60
_SHUFFLE_FILE = re.compile(r"shuffle_(\d+)_(\d+)_0\.(data|index)$")


@pytest.fixture(scope="session")
def vanilla_results(tmp_path_factory):
    """Every workload's result on plain Spark (no plugin), computed once in a subprocess."""
    out = tmp_path_factory.mktemp("vanilla") / "results.pkl"
    subprocess.run([sys.executable, "-m", "tests.shuffle_merge.workloads", str(out)], cwd=PROJECT,
                   check=True, timeout=900, capture_output=True)
    return pickle.loads(out.read_bytes())


def shuffle_files(local_dir: Path, *, merged: bool, shuffle_id: int | None = None) -> list[Path]:
    """Shuffle data/index files under the executors' ``spark.local.dir``: merged or original ones."""
    found = []
    for path in Path(local_dir).rglob("shuffle_*"):
        m = _SHUFFLE_FILE.search(path.name)
        if m and (shuffle_id is None or int(m.group(1)) == shuffle_id):
            if (int(m.group(2)) >= SYNTHETIC_BASE) == merged:
                found.append(path)
    return found
