"""Holds under dynamic allocation: a held executor is never removed as idle, and holds ask for no executors.

Dynamic allocation removes an executor idle for ``executorIdleTimeout``, and a hold makes its executor
idle; so an executor idle for half that timeout is released (``endReason`` ``idle``) and gets tasks
again. Dynamic allocation sizes the application from pending plus running tasks, which a hold does not
change: with as many tasks as executors, none is added while one is held. When the idle hold ends is
checked with a clock the test drives (test_decisions.py); here, that Spark removed no executor.
"""

import time

import pytest

import spark_plugin
from spark_plugin.wrangler import running
from spark_plugin.wrangler._jvm import JvmHolds
from tests.helpers import eventually, executor_ids

from .jobs import holds_only_session

pytestmark = pytest.mark.spark

IDLE_TIMEOUT_S = 10  # long enough that no executor times out while the session starts
SPARK_SESSION = holds_only_session("local-cluster[4,1,1024]", **{
    "spark.executor.cores": "1", "spark.dynamicAllocation.enabled": "true",
    "spark.dynamicAllocation.shuffleTracking.enabled": "true", "spark.dynamicAllocation.initialExecutors": "3",
    "spark.dynamicAllocation.minExecutors": "1", "spark.dynamicAllocation.maxExecutors": "4",
    "spark.dynamicAllocation.schedulerBacklogTimeout": "1s",
    "spark.dynamicAllocation.executorIdleTimeout": f"{IDLE_TIMEOUT_S}s"})


def sleepy(seconds):
    def task(x):
        time.sleep(seconds)
        return x * x
    return task


def until(deadline):
    """Tasks that end together at ``deadline`` (``time.time()``: local-cluster's executors share this clock)."""
    def task(x):
        time.sleep(max(0.0, deadline - time.time()))
        return x * x
    return task


def test_a_held_idle_executor_is_released_before_it_times_out_and_no_executor_is_added(spark):
    tm = spark_plugin.telemetry(spark)
    sc = spark.sparkContext
    eventually(lambda: len(executor_ids(spark)) == 3)
    loop = running(spark)
    if loop is not None:
        loop.stop()
    holds = JvmHolds(spark)
    mark = tm.mark()
    assert sc.parallelize(range(3), 3).map(sleepy(1.0)).sum() == 5  # every executor has just run a task
    # Hold the one whose task ended last: on a loaded machine another may have been idle for seconds already.
    tasks = eventually(lambda: (lambda t: t if len(t) == 3 else None)(tm.records(since=mark)["task"].to_pylist()))
    held = max(tasks, key=lambda t: t["finishTime"])["executorId"]
    mark = tm.mark()
    assert holds.hold(held, 60_000, 0.9) == "held"
    # One task waits for the hold. The job outlasts the idle timeout, so a hold never released would see its
    # executor removed; the task launched on release ends with the others instead of sleeping a full span.
    assert sc.parallelize(range(3), 3).map(until(time.time() + 1.2 * IDLE_TIMEOUT_S)).sum() == 5
    records = tm.records(since=mark)
    hold = records["wrangler_hold"].to_pylist()
    assert [(h["executorId"], h["endReason"]) for h in hold] == [(held, "idle")]
    events = [(e["executorId"], e["event"]) for e in records["executor"].to_pylist()]
    assert not [e for e in events if e[1] in ("added", "removed")], events  # released before it timed out
    tasks = records["task"].to_pylist()
    assert any(t["executorId"] == held and t["launchTime"] >= hold[0]["endTime"] for t in tasks)
