"""Rotary's arbiter on ``local[2]``: every job of a workload runs to the end.

Each job's epochs run in a FAIR pool capped at its grant (``dev.sparkrm.scheduler.CappedPool``). Local mode
offers slots only on task events, and Spark counts a task's end in its pool only after the backend offered
the freed slot; a pool that declined that offer, with another of its task sets waiting (TPC-H queries run
broadcast jobs beside their stages) and nothing running, waited forever. The cluster backends hid it by
offering every second. The pool now asks for another offer round shortly after declining one.
"""

import json
import subprocess
import sys

import pytest


@pytest.mark.spark
def test_the_workload_benchmark_on_local_2_runs_every_job_to_the_end(tmp_path):
    # this command stopped for good at its second job's first epoch (3 runs of 3) before the fix
    run = subprocess.run([sys.executable, "-m", "benchmarks.rotary", "workload", "--sf", "0.01", "--parts", "2",
                          "--batches", "3", "--jobs", "2", "--seeds", "0", "--policies", "edf", "--time-scale",
                          "0.01", "--epoch", "0.3", "--master", "local[2]", "--out", str(tmp_path),
                          "--data", str(tmp_path / "tpch")], capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-3000:]
    [result] = tmp_path.glob("*.workload-*.json")
    records = json.loads(result.read_text())["runs"]["0"]["edf"]["records"]
    assert len(records) == 2
