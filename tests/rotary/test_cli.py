"""``python -m spark_plugin.rotary``: a live run stopped by its criterion, saved, and resumed.

Arguments refused before Spark starts are tested in test_cli_arguments.py (no Spark).
"""

import json
import subprocess
import sys

import pytest

from benchmarks.tpch.data import ensure_dataset

pytestmark = pytest.mark.spark


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "spark_plugin.rotary", *args], capture_output=True, text=True,
                          timeout=600)


def test_list_names_the_supported_queries():
    run = _cli("list")
    assert run.returncode == 0 and run.stdout.split()[:3] == ["Q1", "Q3", "Q4"]


def test_a_run_stops_at_its_criterion_checkpoints_and_resumes_to_the_exact_answer(tmp_path):
    data = ensure_dataset(tmp_path / "tpch", 0.01, 2)
    common = ["--master", "local[2]", "--checkpoint", str(tmp_path / "ck")]
    first = _cli("run", "1", "--data", str(data), "--batches", "4", "--until", "RUN FOR 2 EPOCHS", *common)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "RUN FOR 2 EPOCHS: attained" in first.stdout and "batch 2/4" in first.stdout
    assert json.loads((tmp_path / "ck" / "state.json").read_text())["batches_done"] == 2
    second = _cli("run", "--resume", str(tmp_path / "ck"), *common)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "batch 4/4 (100%)" in second.stdout and "exact" in second.stdout
    assert json.loads((tmp_path / "ck" / "state.json").read_text())["batches_done"] == 4
