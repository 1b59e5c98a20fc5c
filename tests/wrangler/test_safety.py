"""Wrangler safe to leave on, on a real three-executor local-cluster with the feedback guard on.

Executor slowness is real, not mocked: a task finds the executor JVM it runs under among its ancestor
processes and sleeps longer on the chosen one; a frozen executor is a JVM stopped with SIGSTOP; a lost
one is killed with SIGKILL. Tests run in file order: online training first (it reads every task since the
application started), the guard's window (4 s here) is let pass between tests, and the executor is killed last.
"""

import logging
import os
import signal
import time

import numpy as np
import pytest

import spark_plugin
from spark_plugin.wrangler import Wrangler, running
from spark_plugin.wrangler._jvm import JvmHolds
from tests.helpers import eventually

from .jobs import executor_pid, held_ms, in_background, steady_jobs

pytestmark = pytest.mark.spark

INTERVAL_MS, CAP_MS, WINDOW_MS = 500, 3000, 4000
SPARK_SESSION = dict(
    master="local-cluster[3,1,1024]",
    features=["wrangler"],
    conf={"spark.wrangler.interval": f"{INTERVAL_MS}ms", "spark.wrangler.hold.maxDuration": f"{CAP_MS}ms",
          "spark.wrangler.guard.window": f"{WINDOW_MS}ms", "spark.wrangler.train.warmup": "1h",
          "spark.sparkrm.telemetry.dir": "{session_dir}/telemetry", "spark.locality.wait": "0"},
)


class Flags:
    """A stand-in model (ours, not Spark's) that flags the given executors with confidence 0.9."""

    features_ = ["cpuIdlePct"]

    def __init__(self, *flagged):
        self.flagged = set(flagged)

    def predict(self, X, nodes, workloads):
        hit = np.array([n in self.flagged for n in nodes])
        return np.where(hit, 1.0, -1.0), np.where(hit, 0.9, 0.1)


def flag_one_during_jobs(spark, tm, *, seconds: float, lead_s: float, slow_pid: int | None = None):
    """Run :func:`steady_jobs` and, ``lead_s`` into them, a loop whose model flags executor 1 at every tick.

    Returns the stopped loop, the telemetry records from its start, and its start and end (epoch ms).
    """
    job, out = in_background(lambda: steady_jobs(spark, seconds, slow_pid=slow_pid))
    time.sleep(lead_s)
    mark, start = tm.mark(), time.time() * 1000
    loop = Wrangler(spark, predictor=Flags("1")).start()
    job.join()
    loop.stop()
    end = time.time() * 1000
    assert out["value"] and set(out["value"]) == {sum(x * x for x in range(30))}
    return loop, tm.records(since=mark), start, end


@pytest.fixture(scope="module")
def tm(spark):
    running(spark).stop()  # the session's own loop trains online; these tests bring their models
    return spark_plugin.telemetry(spark)


def squares(spark, n=10):
    return spark.sparkContext.parallelize(range(n), n).map(lambda x: x * x).sum()


def test_online_training_says_once_why_it_cannot_train_and_keeps_its_data(spark, caplog):
    # First in the file: the loop reads the application's telemetry from its start, 20 tasks in all.
    with caplog.at_level(logging.DEBUG, logger="spark_plugin.wrangler.loop"):
        loop = Wrangler(spark, warmup_ms=1000).start()
        try:
            assert squares(spark) == 285
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


def test_holds_of_a_slow_executor_stand(spark, tm):
    # executor 1's tasks are seen to be slow before the model flags it
    loop, records, start, end = flag_one_during_jobs(spark, tm, seconds=14, lead_s=4, slow_pid=executor_pid(spark, "1"))
    assert {d["action"] for d in loop.decisions_} <= {"held", "renewed", "resting"}, records["wrangler_guard"].to_pylist()
    assert records["wrangler_guard"].num_rows == 0, records["wrangler_guard"].to_pylist()
    assert held_ms(records["wrangler_hold"].to_pylist(), "1", start, end) > 0.5 * (end - start)


def test_a_hold_stands_when_the_slowness_begins_with_it(spark, tm):
    # Executor 1 ran fast for a whole guard window, then turns slow as the model flags it: as when node
    # counters show a burst before any task does. Only the tasks that run through the hold judge it.
    assert set(steady_jobs(spark, WINDOW_MS / 1000)) == {sum(x * x for x in range(30))}
    loop, records, start, end = flag_one_during_jobs(spark, tm, seconds=10, lead_s=0.3,
                                                     slow_pid=executor_pid(spark, "1"))
    assert records["wrangler_guard"].num_rows == 0, records["wrangler_guard"].to_pylist()
    assert held_ms(records["wrangler_hold"].to_pylist(), "1", start, end) > 0.5 * (end - start)


def test_the_guard_stops_a_useless_model_from_holding_a_healthy_executor(spark, tm):
    # the slow tasks of the last test leave the guard's window first
    loop, records, start, end = flag_one_during_jobs(spark, tm, seconds=30, lead_s=WINDOW_MS / 1000 + 1)
    # The model flags executor 1 at every tick. Each hold it asks for is judged by its witnesses (the tasks running
    # on the executor when it began) and ends once the first has ended unslow; the back-off then refuses holds for
    # 6 s, 12 s, 24 s. How long a witness runs depends on the machine's load: the holds took under 5% of the run on
    # an idle machine, 8-10.5% on a loaded CI one (2026-11-25/26), so the test checks the mechanism, not a share.
    # A hold's lone witness may run over 1.3x its stage's median by chance on a loaded machine; that hold stands to
    # the cap (3 s, once in a clean-clone CI on 2026-11-25) and is the one hold allowed to; the executor then rests
    # (is not held again for a while) by design, so "resting" decisions follow such a hold, and when that hold
    # stood the back-off starts again from twice the cap (clean-clone CI of ddf19f6: 6 s, 12 s, 6 s).
    assert len(loop.decisions_) >= 10
    holds = [h for h in records["wrangler_hold"].to_pylist() if h["executorId"] == "1"]
    capped = [h for h in holds if h["endReason"] == "cap"]
    assert len(capped) <= 1, holds
    tasks = [t for t in records["task"].to_pylist() if t["executorId"] == "1"]
    for hold in (h for h in holds if h["endReason"] == "unconfirmed"):
        witnesses = [t["finishTime"] for t in tasks if t["launchTime"] <= hold["startTime"] < t["finishTime"]]
        judged_at = min(witnesses, default=hold["startTime"])  # an idle executor's own recent tasks judge at once
        assert hold["endTime"] - judged_at < 1000, (hold, witnesses)
    refuted = [h for h in holds if h not in capped]
    assert len(refuted) <= (3 if not capped else 5), holds  # the back-off; a capped hold that stood resets it
    assert held_ms(refuted, "1", start, end) < 0.20 * (end - start), holds
    expected = {"unconfirmed", "distrusted"} | ({"resting"} if capped else set())
    assert expected >= {d["action"] for d in loop.decisions_} - {"held", "renewed"}
    guard = records["wrangler_guard"].to_pylist()
    assert guard and {g["executorId"] for g in guard} == {"1"}
    assert all(g["executorMedian"] <= 1.3 * g["othersMedian"] and g["tasks"] >= 1 for g in guard)
    backoffs = [g["backoffMs"] for g in guard]
    assert backoffs[0] == 2 * CAP_MS
    for before, after in zip(backoffs, backoffs[1:]):  # it doubles while repeated; a hold that stood resets it
        assert after == 2 * before or (capped and after == 2 * CAP_MS), backoffs


def test_a_frozen_executor_is_held_while_silent_and_released_after(spark, tm):
    frozen = executor_pid(spark, "2")
    time.sleep(WINDOW_MS / 1000 + 1)
    mark = tm.mark()
    loop = Wrangler(spark, predictor=Flags()).start()  # a model that flags nothing
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
    job, out = in_background(lambda: steady_jobs(spark, 6))
    eventually(lambda: spark.sparkContext.statusTracker().getActiveStageIds())
    assert holds.hold("2", 60_000, 0.9, silent=True) == "held"  # healthy: the guard would refuse a model's hold
    os.kill(victim, signal.SIGKILL)
    job.join()
    assert out["value"] and set(out["value"]) == {sum(x * x for x in range(30))}
    hold = eventually(lambda: tm.records(since=mark)["wrangler_hold"].to_pylist())
    assert [(h["executorId"], h["endReason"]) for h in hold] == [("2", "removed")]
    assert holds.hold("2", 1000, 0.9) == "inactive" and holds.current() == []
