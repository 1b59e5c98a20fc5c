"""Wrangler on a real three-executor local-cluster: node samples, holds, decisions in both modes.

A hold's start and end are stamped inside the scheduler backend's lock, so "no task launched while
held" is checked exactly: no task record of the held executor has ``start < launchTime < end``. How long
holds last (expiry, cap, rest) is checked with a clock the test drives, in test_decisions.py.
"""

import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

import spark_plugin
from spark_plugin.wrangler import Wrangler, running
from spark_plugin.wrangler._jvm import JvmHolds
from tests.helpers import eventually

from .jobs import flag_model, in_background, launches_inside

pytestmark = pytest.mark.spark

INTERVAL_MS, CAP_MS = 200, 3000
SPARK_SESSION = dict(
    master="local-cluster[3,1,1024]",
    features=["wrangler"],
    conf={"spark.wrangler.interval": f"{INTERVAL_MS}ms", "spark.wrangler.hold.maxDuration": f"{CAP_MS}ms",
          "spark.wrangler.train.warmup": "1h", "spark.sparkrm.telemetry.dir": "{session_dir}/telemetry",
          "spark.locality.wait": "0", "spark.wrangler.guard.enabled": "false"},  # the mechanism alone: holds of
)                                                                                # healthy executors (test_safety: the guard)


@pytest.fixture(scope="module")
def tm(spark):
    return spark_plugin.telemetry(spark)


@pytest.fixture(scope="module")
def holds(spark):
    """The JVM holds, with the session's own loop stopped so that only the test holds and releases."""
    loop = running(spark)
    if loop is not None:
        loop.stop()
    return JvmHolds(spark)


FLAG_ONE = flag_model(Path(tempfile.mkdtemp(prefix="sparkrm-wrangler-")) / "flag-1.json", "1")


def sleepy_job(spark, tasks=60, seconds=0.1):
    """``tasks`` tasks that each sleep; returns the sum of squares, which must be exact."""
    return spark.sparkContext.parallelize(range(tasks), tasks).map(
        lambda x: (time.sleep(seconds), x * x)[1]).sum()


def test_session_starts_the_predictor_loop_without_a_model(spark):
    loop = eventually(lambda: running(spark))
    assert loop.predictor_ is None and loop.mode_ == "hold" and loop.interval_ms_ == INTERVAL_MS
    eventually(lambda: loop.ticks_ >= 3)


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


def test_the_loop_holds_a_flagged_executor_while_it_stays_flagged(spark, tm, holds):  # holds: session loop off
    mark = tm.mark()
    loop = Wrangler(spark, predictor=FLAG_ONE).start()
    try:
        eventually(lambda: any(d["action"] == "held" for d in loop.decisions_))
        assert sleepy_job(spark) == sum(x * x for x in range(60))
    finally:
        loop.stop()
    records = tm.records(since=mark)
    hold = records["wrangler_hold"].to_pylist()
    assert hold and {h["executorId"] for h in hold} == {"1"}
    assert {d["executorId"] for d in loop.decisions_} == {"1"}
    tasks = records["task"].to_pylist()
    assert len(tasks) == 60 and launches_inside(tasks, hold) == []
    assert all(h["endReason"] in ("cap", "released", "expired") for h in hold)
    assert len(loop.predict_seconds_) >= 1 and loop.predictor_ is None  # a JSON model: nothing for Python


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
