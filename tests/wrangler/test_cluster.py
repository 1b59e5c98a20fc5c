"""Wrangler on a real three-executor local-cluster: a JSON model from --conf alone, node samples, holds,
decisions in both modes, and holds giving way where Spark needs the executor.

A hold's start and end are stamped inside the scheduler backend's lock, so "no task launched while
held" is checked exactly: no task record of the held executor has ``start < launchTime < end``. How long
holds last (expiry, cap, rest) is checked with a clock the test drives, in test_decisions.py.

A held executor counts as inactive to Spark, so a barrier stage finds too few slots and a decommission
request is refused; Wrangler ends the hold and, for a decommission, re-issues it (``HoldSafety``,
``DecommissionNotice``): real barrier jobs, a real SIGPWR to an executor JVM. Those tests come last, as
they decommission executors 1 and 2.
"""

import os
import signal
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

import spark_plugin
from benchmarks.common import executor_pid
from spark_plugin.wrangler import StragglerPredictor, Wrangler, build_dataset, running
from spark_plugin.wrangler._jvm import JvmDecisions, JvmHolds
from tests.helpers import eventually, executor_ids

from .jobs import flag_model, in_background, launches_inside
from .synthetic import telemetry

pytestmark = pytest.mark.spark

INTERVAL_MS, CAP_MS = 200, 60_000
FLAG_ONE = flag_model(Path(tempfile.mkdtemp(prefix="sparkrm-wrangler-")) / "flag-1.json", "1")
SPARK_SESSION = dict(
    master="local-cluster[3,1,1024]",
    features=["wrangler"],
    conf={"spark.wrangler.interval": f"{INTERVAL_MS}ms", "spark.wrangler.hold.maxDuration": f"{CAP_MS}ms",
          "spark.wrangler.train.warmup": "1h", "spark.sparkrm.telemetry.dir": "{session_dir}/telemetry",
          "spark.locality.wait": "0", "spark.wrangler.model.path": str(FLAG_ONE),
          "spark.decommission.enabled": "true", "spark.scheduler.barrier.maxConcurrentTasksCheck.interval": "1s",
          "spark.wrangler.guard.enabled": "false"},  # the mechanism alone: holds of healthy executors
)                                                    # (test_safety: the guard)


@pytest.fixture(scope="module")
def tm(spark):
    return spark_plugin.telemetry(spark)


@pytest.fixture(scope="module")
def holds(spark):
    """The JVM holds, with the session's own loop stopped so that only the test holds and releases."""
    eventually(lambda: len(executor_ids(spark)) == 3)
    loop = running(spark)
    if loop is not None:
        loop.stop()
    return JvmHolds(spark)


def sleepy_job(spark, tasks=60, seconds=0.1):
    """``tasks`` tasks that each sleep; returns the sum of squares, which must be exact."""
    return spark.sparkContext.parallelize(range(tasks), tasks).map(
        lambda x: (time.sleep(seconds), x * x)[1]).sum()


def test_a_json_model_in_the_conf_alone_is_installed_by_the_jvm_which_holds_what_it_flags(spark, tm):
    # First in the file: the session's own decisions run with the model of spark.wrangler.model.path, which
    # flags executor 1; Python only reads them back (as a spark-submit application with no Python would hold).
    loop = eventually(lambda: running(spark))
    assert JvmDecisions(spark).has_model() and loop.predictor_ is None and loop.mode_ == "hold"
    eventually(lambda: any(d["action"] == "held" for d in loop.decisions_))
    mark = tm.mark()
    assert sleepy_job(spark, tasks=30) == sum(x * x for x in range(30))
    records = tm.records(since=mark)
    holds = records["wrangler_hold"].to_pylist()
    assert {h["executorId"] for h in holds} <= {"1"} and launches_inside(records["task"].to_pylist(), holds) == []
    assert {(d["executorId"], d["why"]) for d in loop.decisions_} == {("1", "model")}
    assert loop.ticks_ >= 3 and len(loop.predict_seconds_) >= 1


def test_every_executor_sends_node_samples_every_interval(tm):
    def enough():
        n = tm.records()["node"].to_pandas()
        return [n] if n["executorId"].nunique() == 3 and n.groupby("executorId").size().min() >= 5 else None

    nodes = eventually(enough)[0]
    assert sorted(nodes["executorId"].unique()) == ["0", "1", "2"]
    # a sample over which no jiffy passed has no CPU shares (null), which a plain sum would count as 0
    cpu = nodes[["cpuUserPct", "cpuSystemPct", "cpuIowaitPct", "cpuStealPct", "cpuIdlePct"]].sum(axis=1, min_count=1)
    assert np.allclose(cpu.dropna(), 100.0)
    assert (nodes["intervalMs"] > 0).all()
    assert (nodes["memAvailableBytes"] > 0).all() and (nodes["heapUsedBytes"] > 0).all()
    assert (nodes["jvmThreads"] > 10).all() and (nodes["procCpuPct"] >= 0).all() and (nodes["load1"] >= 0).all()
    assert (nodes["cgroupThrottledPct"].dropna() >= 0).all()
    for _, samples in nodes.groupby("executorId"):
        assert samples["time"].is_monotonic_increasing


def test_no_task_launches_on_a_held_executor_and_every_task_completes(spark, tm, holds):
    mark = tm.mark()
    job, out = in_background(lambda: sleepy_job(spark))
    eventually(lambda: spark.sparkContext.statusTracker().getActiveStageIds())  # the job is running
    assert holds.hold("1", 2000, 0.9) == "held"
    job.join()
    assert out["value"] == sum(x * x for x in range(60))
    records = eventually(lambda: (lambda r: r if r["wrangler_hold"].num_rows else None)(tm.records(since=mark)))
    hold = records["wrangler_hold"].to_pylist()
    assert [(h["executorId"], h["endReason"]) for h in hold] == [("1", "expired")]  # its own 2 s, not the cap
    tasks = records["task"].to_pylist()
    assert len(tasks) == 60 and all(t["status"] == "SUCCESS" for t in tasks)
    assert launches_inside(tasks, hold) == []
    on_1 = [t["launchTime"] for t in tasks if t["executorId"] == "1"]
    assert any(t < hold[0]["startTime"] for t in on_1) or any(t > hold[0]["endTime"] for t in on_1)


def test_the_last_open_executor_is_never_held(holds):
    assert holds.hold("0", 5000, 0.9) == "held"
    assert holds.hold("1", 5000, 0.9) == "held"
    assert holds.hold("2", 5000, 0.9) == "last-active"
    assert holds.hold("7", 5000, 0.9) == "inactive"
    assert sorted(h["executorId"] for h in holds.current()) == ["0", "1"]
    assert holds.release("0") and holds.release("1") and holds.current() == []


def test_a_model_trained_in_python_is_exported_and_installed_in_the_jvm(spark, holds):  # holds: session's off
    tasks, nodes = telemetry(seed=3, seconds=200)
    predictor = StragglerPredictor(min_node_tasks=50).fit(build_dataset(tasks, nodes, max_age_ms=2000))
    loop = Wrangler(spark, predictor=predictor).start()
    try:
        assert loop.predictor_ is predictor and JvmDecisions(spark).has_model()
        scored = len(loop.predict_seconds_)
        eventually(lambda: len(loop.predict_seconds_) > scored + 2)  # scores the executors' counters with it
    finally:
        loop.stop()


def test_hint_mode_holds_nothing_and_records_what_it_would_delay(spark, tm):
    mark = tm.mark()
    loop = Wrangler(spark, predictor=FLAG_ONE, mode="hint").start()
    try:
        eventually(lambda: len(loop.decisions_) >= 3)
        assert sleepy_job(spark, tasks=12) == sum(x * x for x in range(12))
    finally:
        loop.stop()
    assert {(d["executorId"], d["action"]) for d in loop.decisions_} == {("1", "hint")}
    assert tm.records(since=mark)["wrangler_hold"].num_rows == 0


def hold_records(tm, mark):
    return eventually(lambda: tm.records(since=mark)["wrangler_hold"].to_pylist() or None)


def test_a_barrier_job_that_finds_too_few_slots_ends_every_hold_and_runs(spark, tm, holds):
    mark = tm.mark()
    assert holds.hold("1", 60_000, 0.9) == "held"
    rdd = spark.sparkContext.parallelize(range(30), 3).barrier().mapPartitions(lambda part: [sum(part)])
    assert sorted(rdd.collect()) == sorted(sum(range(i * 10, i * 10 + 10)) for i in range(3))
    hold = hold_records(tm, mark)
    assert [(h["executorId"], h["endReason"]) for h in hold] == [("1", "barrier")]
    assert holds.hold("1", 1000, 0.9) == "held" and holds.release("1")  # nothing waits any more


def assert_decommissioned_after_the_hold(spark, tm, mark, executor_id):
    hold = hold_records(tm, mark)
    assert [(h["executorId"], h["endReason"]) for h in hold] == [(executor_id, "decommission")]

    def removed():
        events = tm.records(since=mark)["executor"].to_pylist()
        return [e for e in events if e["executorId"] == executor_id and e["event"] == "removed"] or None

    assert "decommission" in str(eventually(removed, timeout=60)[0]).lower()
    assert spark.sparkContext.parallelize(range(100), 6).map(lambda x: x * x).sum() == sum(x * x for x in range(100))


def test_a_decommission_the_driver_asks_for_a_held_executor_waits_for_the_release(spark, tm, holds):
    mark = tm.mark()
    assert holds.hold("1", 60_000, 0.9) == "held"
    jvm = spark.sparkContext._jvm
    info = jvm.org.apache.spark.scheduler.ExecutorDecommissionInfo("worker drained", jvm.scala.Option.empty())
    backend = spark.sparkContext._jsc.sc().schedulerBackend()
    assert not backend.decommissionExecutor("1", info, False, False)  # what dynamic allocation or a worker asks
    assert_decommissioned_after_the_hold(spark, tm, mark, "1")


def test_a_held_executor_that_is_signalled_to_decommission_is_released_and_decommissions(spark, tm, holds):
    mark = tm.mark()
    assert holds.hold("2", 60_000, 0.9) == "held"
    os.kill(executor_pid(spark, "2"), signal.SIGPWR)  # what a spot preemption or a node drain sends
    assert_decommissioned_after_the_hold(spark, tm, mark, "2")
