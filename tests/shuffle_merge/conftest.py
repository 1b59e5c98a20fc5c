"""Fixtures of the Riffle tests: the vanilla-Spark oracle and a look at shuffle files on disk."""

from __future__ import annotations

import fcntl
import pickle
import re
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from spark_plugin.jar import find_javac, jar_path
from tests.plain_jvm import plain_jvm

PROJECT = Path(__file__).resolve().parents[2]
SYNTHETIC_BASE = 1 << 60
_SHUFFLE_FILE = re.compile(r"shuffle_(\d+)_(\d+)_0\.(data|index)$")


@pytest.fixture(scope="session")
def vanilla_results(tmp_path_factory, worker_id):
    """Every workload's result on plain Spark (no plugin), computed once per test run in a subprocess.

    Under pytest-xdist the workers share one computation: the first computes it into the run's temporary
    folder, which all workers share, while the others wait on a lock (a second Spark application on two
    cores would only slow the first). Without xdist the file is kept in the run's folder too: ``tests/cluster``
    uses this fixture through a conftest of its own, which pytest sets up as a second session fixture."""
    # This run's folder: above every xdist worker's own, or the only one.
    shared = tmp_path_factory.getbasetemp() if worker_id == "master" else tmp_path_factory.getbasetemp().parent
    with open(shared / "vanilla-results.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _vanilla_results(shared / "vanilla-results.pkl")


def _vanilla_results(out: Path) -> dict:
    if not out.exists():
        partial = out.with_suffix(".partial")
        subprocess.run([sys.executable, "-m", "tests.shuffle_merge.workloads", str(partial)], cwd=PROJECT,
                       check=True, timeout=900, capture_output=True)
        partial.replace(out)
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


@contextmanager
def probe_jvm(source: Path, classes: Path, *classpath):
    """A plain JVM (no Spark) with the plugin jar and a test's Java ``source``, compiled into ``classes``
    against the jar (a probe in a Riffle package reaches its package-private classes); ``gateway.jvm``."""
    jar = jar_path()
    subprocess.run([find_javac(), "--release", "17", "-cp", str(jar), "-d", str(classes), str(source)],
                   check=True, capture_output=True)
    with plain_jvm(jar, classes, *classpath) as jvm:
        yield jvm
