"""``python -m spark_plugin.rotary``: a live run stopped by its criterion, saved, and resumed; damaged data.

Arguments refused before Spark starts are tested in test_cli_arguments.py (no Spark).
"""

import json
import shutil
import subprocess
import sys

import pytest

from benchmarks.tpch.data import ensure_dataset
from tests.rotary.cli_runner import run_cli

pytestmark = pytest.mark.spark


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "spark_plugin.rotary", *args], capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def tpch(tmp_path_factory):
    """TPC-H SF 0.01 in 2 parts, generated once for the module."""
    return ensure_dataset(tmp_path_factory.mktemp("tpch"), 0.01, 2)


def test_list_names_the_supported_queries(tmp_path):
    """``main`` in this process (the runs below start ``python -m spark_plugin.rotary`` itself)."""
    run, started = run_cli(tmp_path, "list")
    assert run.returncode == 0 and run.stdout.split()[:3] == ["Q1", "Q3", "Q4"] and not started


def test_a_run_stops_at_its_criterion_checkpoints_and_resumes_to_the_exact_answer(tmp_path, tpch):
    data = tpch
    common = ["--master", "local[2]", "--checkpoint", str(tmp_path / "ck")]
    first = _cli("run", "1", "--data", str(data), "--batches", "4", "--until", "RUN FOR 2 EPOCHS", *common)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "RUN FOR 2 EPOCHS: attained" in first.stdout and "batch 2/4" in first.stdout
    assert json.loads((tmp_path / "ck" / "state.json").read_text())["batches_done"] == 2
    second = _cli("run", "--resume", str(tmp_path / "ck"), *common)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "batch 4/4 (100%)" in second.stdout and "exact" in second.stdout
    assert json.loads((tmp_path / "ck" / "state.json").read_text())["batches_done"] == 4


def test_a_damaged_parquet_file_exits_2_with_one_line_naming_it(tmp_path, tpch):
    """A truncated lineitem file (a copy short of its second half): status 2, the file and the fix, no traces."""
    data = tmp_path / "damaged"
    shutil.copytree(tpch, data)
    damaged = sorted((data / "lineitem").glob("*.parquet"))[-1]
    with open(damaged, "r+b") as f:
        f.truncate(damaged.stat().st_size // 2)
    run = _cli("run", "6", "--data", str(data), "--master", "local[2]", "--batches", "4")
    assert run.returncode == 2, run.stderr[-3000:]
    assert run.stderr.splitlines()[-1] == (
        f"error: {damaged} cannot be read: it is not a whole Parquet file (truncated or overwritten). The TPC-H data "
        f"in {data} is damaged: generate it again (`python -m benchmarks.tpch` notices the damage, or tpchgen-cli "
        "parquet) or point --data at an intact copy.")
    assert "Traceback" not in run.stderr and "\tat org.apache" not in run.stderr, run.stderr[-3000:]
