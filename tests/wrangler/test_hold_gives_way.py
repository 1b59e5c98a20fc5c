"""Holds give way where Spark needs the executor: a barrier job waiting for slots, a decommission.

A held executor counts as inactive to Spark, so a barrier stage finds too few slots and a decommission
request is refused; Wrangler ends the hold and, for a decommission, re-issues it (``HoldSafety``,
``DecommissionNotice``). Real local-cluster, real barrier jobs, a real SIGPWR to an executor JVM.
"""

import os
import signal

import pytest

import spark_plugin
from spark_plugin.wrangler import running
from spark_plugin.wrangler._jvm import JvmHolds
from tests.helpers import eventually, executor_ids

from .jobs import executor_pid, holds_only_session

pytestmark = pytest.mark.spark

SPARK_SESSION = holds_only_session("local-cluster[3,1,1024]", **{
    "spark.decommission.enabled": "true", "spark.scheduler.barrier.maxConcurrentTasksCheck.interval": "1s"})


@pytest.fixture(scope="module")
def tm(spark):
    return spark_plugin.telemetry(spark)


@pytest.fixture(scope="module")
def holds(spark):
    """The JVM holds, with the session's own loop stopped so that only the test holds."""
    eventually(lambda: len(executor_ids(spark)) == 3)
    loop = running(spark)
    if loop is not None:
        loop.stop()
    return JvmHolds(spark)


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
