"""Wrangler safe to leave on, on a real three-executor local-cluster with the feedback guard on, end to end.

Executor slowness is real, not mocked: a task finds the executor JVM it runs under among its ancestor
processes and sleeps longer on the chosen one; a frozen executor is a JVM stopped with SIGSTOP; a lost
one is killed with SIGKILL. The checks are facts of order and count (which executor is held, which hold
ended why, that no task launched inside a hold), never durations: how long holds, back-offs and judgements
take is checked with a clock the test drives in test_decisions.py. Tests run in file order: online training
first (it reads every task since the application started), and the executor is killed last.
"""

import logging
import os
import signal
import tempfile
from pathlib import Path

import pytest

import spark_plugin
from benchmarks.common import executor_pid
from spark_plugin.wrangler import Wrangler, running
from spark_plugin.wrangler._jvm import JvmHolds
from tests.helpers import ManualClock, eventually

from .jobs import flag_model, in_background, launches_inside, steady_jobs

pytestmark = pytest.mark.spark

INTERVAL_MS, CAP_MS, WINDOW_MS = 500, 3000, 4000
SPARK_SESSION = dict(
    master="local-cluster[3,1,1024]",
    features=["wrangler"],
    conf={"spark.wrangler.interval": f"{INTERVAL_MS}ms", "spark.wrangler.hold.maxDuration": f"{CAP_MS}ms",
          "spark.wrangler.guard.window": f"{WINDOW_MS}ms", "spark.wrangler.train.warmup": "1h",
          "spark.wrangler.hold.maxShare": "1",  # two of three held at once, so the guard judges both
          "spark.sparkrm.telemetry.dir": "{session_dir}/telemetry", "spark.locality.wait": "0"},
)


MODELS = Path(tempfile.mkdtemp(prefix="sparkrm-wrangler-"))


def flag_during_jobs(spark, tm, executors: str, *, seconds: float, slow_pid: int | None = None):
    """Run :func:`steady_jobs` and, once each of ``executors`` has finished a task, decide with a model that flags them.

    Returns the stopped loop and the telemetry records from its start.
    """
    mark = tm.mark()
    job, out = in_background(lambda: steady_jobs(spark, seconds, slow_pid=slow_pid))
    eventually(lambda: set(executors) <= set(tm.records(since=mark)["task"].column("executorId").to_pylist()))
    mark = tm.mark()
    loop = Wrangler(spark, predictor=flag_model(MODELS / f"flag-{executors}.json", *executors)).start()
    job.join()
    loop.stop()
    assert out["value"] and set(out["value"]) == {sum(x * x for x in range(30))}
    return loop, tm.records(since=mark)


@pytest.fixture(scope="module")
def tm(spark):
    running(spark).stop()  # the session's own loop trains online; these tests bring their models
    return spark_plugin.telemetry(spark)


def squares(spark, n=10):
    return spark.sparkContext.parallelize(range(n), n).map(lambda x: x * x).sum()


def test_online_training_says_once_why_it_cannot_train_and_keeps_its_data(spark, caplog):
    # First in the file: the loop reads the application's telemetry from its start, 20 tasks in all.
    clock = ManualClock()
    with caplog.at_level(logging.DEBUG, logger="spark_plugin.wrangler.loop"):
        loop = Wrangler(spark, warmup_ms=1000, clock=clock).start()
        try:
            assert squares(spark) == 285
            eventually(lambda: loop._tasks_seen >= 10)
            assert loop._retry_at == 1  # collected, but no try before the warm-up's second has passed
            clock.advance(1.0)
            eventually(lambda: loop._retry_at > 1)  # tried on 10 tasks: too few
            assert squares(spark) == 285
            eventually(lambda: len([r for r in caplog.records if "cannot train its model yet" in r.getMessage()]) >= 2)
            eventually(lambda: loop._tasks_seen >= 20)  # every task record has reached the loop
        finally:
            loop.stop()
    said = [r for r in caplog.records if "cannot train its model yet" in r.getMessage()]
    assert said[0].levelno == logging.WARNING and all(r.levelno == logging.DEBUG for r in said[1:])
    assert "it needs at least 30" in said[0].getMessage()
    assert loop.predictor_ is None and loop.errors_ == 0
    assert loop._tasks_seen >= 20 and sum(len(t) for t in loop._history["task"]) == loop._tasks_seen


def test_holds_keep_offers_from_flagged_executors_and_the_guard_judges_each_by_the_rule(spark, tm):
    # A model flags executor 0 (healthy) and executor 1 (its tasks really sleep 4x longer) at every tick. Which
    # holds the guard refutes depends on how long each witness runs on this machine now; what it does with each
    # does not, and is checked here: how long holds and back-offs last is checked in test_decisions.py.
    loop, records = flag_during_jobs(spark, tm, "01", seconds=6, slow_pid=executor_pid(spark, "1"))
    decisions = loop.decisions_
    assert {(d["executorId"], d["why"]) for d in decisions} <= {("0", "model"), ("1", "model")}
    assert "held" in {d["action"] for d in decisions}
    assert {d["action"] for d in decisions} <= {"held", "renewed", "resting", "unconfirmed", "distrusted"}
    holds = records["wrangler_hold"].to_pylist()
    assert holds and {h["executorId"] for h in holds} <= {"0", "1"}
    assert {h["endReason"] for h in holds} <= {"unconfirmed", "cap", "released", "expired"}, holds
    assert launches_inside(records["task"].to_pylist(), holds) == []
    guard = records["wrangler_guard"].to_pylist()
    assert len(guard) == sum(h["endReason"] == "unconfirmed" for h in holds)  # each refutation ends one hold
    assert all(g["executorMedian"] <= 1.3 * g["othersMedian"] and g["tasks"] >= 1 for g in guard)
    for executor in ("0", "1"):
        backoffs = [g["backoffMs"] for g in guard if g["executorId"] == executor]
        assert backoffs[:1] in ([], [2 * CAP_MS]), backoffs
        for before, after in zip(backoffs, backoffs[1:]):  # doubles while repeated; a hold that stood resets it
            assert after in (2 * before, 2 * CAP_MS), backoffs


def test_a_frozen_executor_is_held_while_silent_and_released_after(spark, tm):
    frozen = executor_pid(spark, "2")
    mark = tm.mark()
    loop = Wrangler(spark, predictor=flag_model(MODELS / "flag-none.json")).start()  # a model that flags nothing
    os.kill(frozen, signal.SIGSTOP)
    try:
        eventually(lambda: any(d["executorId"] == "2" and d["why"] == "silent" and d["action"] in ("held", "renewed")
                               for d in loop.decisions_), timeout=20)
        assert {h["executorId"] for h in JvmHolds(spark).current()} == {"2"}
    finally:
        os.kill(frozen, signal.SIGCONT)
    hold = eventually(lambda: tm.records(since=mark)["wrangler_hold"].to_pylist(), timeout=20)
    loop.stop()
    assert [h["executorId"] for h in hold] == ["2"] and hold[0]["endReason"] in ("released", "expired", "cap")
    assert {d["why"] for d in loop.decisions_} == {"silent"}
    assert set(steady_jobs(spark, 1)) == {sum(x * x for x in range(30))}


def test_a_held_executor_that_is_lost_ends_its_hold_and_every_result_is_right(spark, tm):
    holds = JvmHolds(spark)
    victim = executor_pid(spark, "2")
    mark = tm.mark()
    job, out = in_background(lambda: steady_jobs(spark, 4))
    eventually(lambda: spark.sparkContext.statusTracker().getActiveStageIds())
    assert holds.hold("2", 60_000, 0.9, silent=True) == "held"  # healthy: the guard would refuse a model's hold
    os.kill(victim, signal.SIGKILL)
    job.join()
    assert out["value"] and set(out["value"]) == {sum(x * x for x in range(30))}
    hold = eventually(lambda: tm.records(since=mark)["wrangler_hold"].to_pylist())
    assert [(h["executorId"], h["endReason"]) for h in hold] == [("2", "removed")]
    assert holds.hold("2", 1000, 0.9) == "inactive" and holds.current() == []
