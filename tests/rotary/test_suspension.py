"""Riveter's suspension: stop at a step boundary, resume elsewhere, same answer.

The module's session is ``local[2]``: suspension works at step boundaries and through job-group cancellation,
both in the driver (:mod:`spark_plugin.rotary.suspension`), and nothing in it depends on executors; "elsewhere"
is another application, on one core with other shuffle partitions (``RESUME_ELSEWHERE``).
"""

import json
import subprocess
import sys
import threading
import time

import pandas as pd
import pytest

from benchmarks.tpch.data import ensure_dataset
from spark_plugin import rotary
from spark_plugin.rotary.riveter import PIPELINE, REDO, DiskSpeed, TerminationWindow
from spark_plugin.rotary.suspension import Suspension, SuspendableQuery
from tests.helpers import ManualClock

pytestmark = pytest.mark.spark
SPARK_SESSION = dict(master="local[2]", features=[], conf={})  # see the module's docstring

BATCHES = 6
FAST_DISK = DiskSpeed(write_bps=100e6, read_bps=100e6)

#: Resumes a checkpoint in a new application with one core and 3 shuffle partitions (the suspended
#: run had two cores and 4, pytest.ini's), then writes the final answer as Parquet.
RESUME_ELSEWHERE = """
import sys
from pyspark.sql import SparkSession
from spark_plugin.rotary import ProgressiveQuery
spark = (SparkSession.builder.master("local[1]").config("spark.sql.shuffle.partitions", "3")
         .config("spark.ui.enabled", "false").getOrCreate())
job = ProgressiveQuery.resume(spark, sys.argv[1])
*_, last = job
last.result.astype(str).reset_index(drop=True).to_parquet(sys.argv[2])
spark.stop()
"""


@pytest.fixture(scope="module")
def data(session_dir):
    return ensure_dataset(session_dir / "tpch", 0.01, 2)


@pytest.fixture(scope="module")
def q3_exact(spark, data):
    """Q3's exact answer, which both runs of Q3 below must end with."""
    return rotary.ProgressiveQuery(spark, 3, data, batches=BATCHES).exact()


def test_a_requested_suspension_stops_at_the_next_boundary_and_resumes_on_other_cores(spark, data, q3_exact,
                                                                                      tmp_path):
    clock = ManualClock(tick=0.25)  # each reading a quarter second after the last
    run = SuspendableQuery(rotary.ProgressiveQuery(spark, 3, data, batches=BATCHES, growth=1), tmp_path / "q3",
                           clock=clock)
    seen = []

    def ask_after_two_batches(snapshot):
        seen.append(snapshot.batch)
        if snapshot.batch == 2:
            asking = threading.Thread(target=run.request_suspend)  # from another thread, as a notice would
            asking.start()
            asking.join()
            clock.advance(3.0)  # before the query reaches its boundary

    outcome = run.run(on_snapshot=ask_after_two_batches)
    assert isinstance(outcome, Suspension) and outcome.reason == "requested"
    assert outcome.batches_done == 2 and seen == [1, 2]
    # The lag runs from the request, through the wait for the boundary, to the state on disk.
    assert outcome.write_s > 0 and outcome.lag_s >= 3.0 + outcome.write_s
    assert outcome.state_bytes == sum(f.stat().st_size for f in outcome.path.iterdir())
    assert outcome.groups == run.query.groups > 0
    resumed = subprocess.run([sys.executable, "-c", RESUME_ELSEWHERE, str(outcome.path),
                              str(tmp_path / "final.parquet")], capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "final.parquet"),
                                  q3_exact.astype(str).reset_index(drop=True))


def test_batches_computed_before_the_suspension_are_kept(spark, data, tmp_path):
    # the module's batch count (one batched copy for every test): growth 3 makes the second chunk two batches
    run = SuspendableQuery(rotary.ProgressiveQuery(spark, 6, data, batches=BATCHES, growth=3), tmp_path / "q6")
    run.query.step()
    run.query.step()  # the second Spark query computed batches 2-3 and delivered one
    assert run.query.batches_ready == 1
    run.request_suspend()
    outcome = run.run()
    assert outcome.batches_done == 3
    assert json.loads((outcome.path / "state.json").read_text())["batches_done"] == 3


def test_the_cost_model_runs_on_far_from_the_window_and_suspends_when_it_has_begun(spark, data, tmp_path):
    far = TerminationWindow(start_s=1e6, end_s=2e6, probability=1.0)
    run = SuspendableQuery(rotary.ProgressiveQuery(spark, 1, data, batches=BATCHES), tmp_path / "far",
                           window=far, disk=FAST_DISK)
    assert run.run().final
    assert run.decisions and all(d.strategy == REDO for _, d in run.decisions)

    begun = TerminationWindow(start_s=0.0, end_s=1e3, probability=0.5)
    run = SuspendableQuery(rotary.ProgressiveQuery(spark, 1, data, batches=BATCHES), tmp_path / "begun",
                           window=begun, disk=FAST_DISK)
    run.query.step()
    outcome = run.run()
    assert isinstance(outcome, Suspension) and outcome.reason == "cost model" and outcome.batches_done == 1
    assert run.decisions[-1][1].strategy == PIPELINE


def test_the_state_estimate_tracks_the_checkpoint_size(spark, data, tmp_path):
    job = rotary.ProgressiveQuery(spark, 10, data, batches=BATCHES, growth=1)  # Q10: many groups
    for _ in range(3):
        job.step()
    estimate = job.state_bytes
    written = sum(f.stat().st_size for f in job.checkpoint(tmp_path / "q10").iterdir())
    assert job.groups > 100
    assert written / 3 <= estimate <= written * 3


def test_a_suspension_asked_for_at_once_cancels_the_spark_query_in_flight(spark, data, q3_exact, tmp_path):
    tracker = spark.sparkContext.statusTracker()

    def run_cancelling_the_second_query(path):
        run = SuspendableQuery(rotary.ProgressiveQuery(spark, 3, data, batches=BATCHES, growth=20), path,
                               clock=ManualClock(tick=1.0))
        ended = threading.Event()

        def cancel_once_a_job_runs():
            while not ended.is_set():
                if any(info is not None and info.status == "RUNNING"
                       for info in map(tracker.getJobInfo, tracker.getJobIdsForGroup(run.job_group))):
                    run.request_suspend(cancel_running=True)
                    return
                time.sleep(0.01)

        def after_the_first_batch(snapshot):  # the next Spark query computes the 5 other batches
            if snapshot.batch == 1:
                threading.Thread(target=cancel_once_a_job_runs, daemon=True).start()

        try:
            return run.run(on_snapshot=after_the_first_batch)
        finally:
            ended.set()

    # The query in flight (a few tenths of a second in local mode) can end before the request reaches it on a
    # loaded machine (once in about 150 runs): the run then ends with the exact answer, as it must, and the test
    # runs it again for a cancellation.
    for attempt in range(3):
        outcome = run_cancelling_the_second_query(tmp_path / f"q3-{attempt}")
        if isinstance(outcome, Suspension):
            break
        pd.testing.assert_frame_equal(outcome.result, q3_exact)
    assert isinstance(outcome, Suspension) and outcome.batches_done == 1 and outcome.discarded_s > 0
    job = rotary.ProgressiveQuery.resume(spark, outcome.path)
    *_, last = job
    pd.testing.assert_frame_equal(last.result, q3_exact)
