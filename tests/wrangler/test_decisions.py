"""Wrangler's decisions, holds, guard and safety checks with time driven by the test.

``java/HoldsProbe.java`` builds the driver's ``JvmDecisions``, ``ExecutorHolds``, ``FeedbackGuard`` and
``HoldSafety`` over a plain scheduler, with a clock the test sets: nothing runs by itself, every decision
and hold tick happens at the time the test says, so each duration below is exact. The real scheduler
(offers really withheld, tasks really delayed) is exercised end to end by test_cluster.py and test_safety.py.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import numpy as np

from spark_plugin.wrangler import StragglerPredictor, build_dataset, is_flagged
from spark_plugin.yaq.waiting import queue_wait
from tests.plain_jvm import doubles, plain_jvm

from .jobs import flag_model
from .synthetic import telemetry

pytestmark = pytest.mark.spark  # a JVM

PROBE = Path(__file__).resolve().parent / "java" / "HoldsProbe.java"
INTERVAL, CAP, WINDOW, BETA = 500, 3000, 4000, 1.3
NO_IDLE_LIMIT = 2**63 - 1


@pytest.fixture(scope="module")
def jvm(tmp_path_factory):
    from spark_plugin.jar import find_javac, jar_path, pyspark_jars_dir

    classes = tmp_path_factory.mktemp("probe")
    classpath = [jar_path(), pyspark_jars_dir() / "*"]
    subprocess.run([find_javac(), "--release", "17", "-cp", ":".join(map(str, classpath)), "-d", str(classes),
                    str(PROBE)], check=True, capture_output=True)
    with plain_jvm(classes, *classpath) as jvm:
        yield jvm


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    return {name: str(flag_model(folder / f"{name or 'none'}.json", *name)) for name in ("", "1", "12")}


class Probe:
    """The probe and what it recorded, as Python values."""

    def __init__(self, jvm, executors="0,1,2", *, guard=True, idle_limit_ms=NO_IDLE_LIMIT, cap=CAP, share=1.0,
                 wait_aware=False):
        self.java = jvm.dev.sparkrm.wrangler.HoldsProbe(executors, INTERVAL, cap, WINDOW if guard else 0, BETA,
                                                        idle_limit_ms, float(share), wait_aware)
        self.holds = self.java.holds()
        self.executors = executors.split(",")
        self.running = []

    def at(self, t):
        self.java.at(t)
        return self

    @property
    def now(self):
        return int(self.java.now())

    def ended(self):
        return json.loads(self.java.endedJson())

    def refuted(self):
        return json.loads(self.java.refutedJson())

    def decisions(self):
        return json.loads(self.java.decisions().decisionsJson(0))

    def current(self):
        return sorted(h["executorId"] for h in json.loads(self.holds.holdsJson()))

    def step(self, *, silent=(), slow=(), running=None):
        """One interval of a steady job: the tasks running end (``slow`` executors' at 4x), every executor not
        held starts one, every executor not ``silent`` sends a sample; then a decision and a hold tick."""
        for ex in running if running is not None else list(self.running):
            self.java.taskEnded(ex, "s", 4.0 if ex in slow else 1.0)
        self.running = [ex for ex in self.executors if not self.java.withheld(ex)]
        for ex in self.running:
            self.java.taskStarted(ex)
        for ex in self.executors:
            if ex not in silent:
                self.java.sample(ex, self.now, 50.0)
        self.java.decide()
        self.java.tick()


def test_the_rule_holds_the_most_confident_flagged_executors_and_never_all(jvm):
    choose = jvm.dev.sparkrm.wrangler.JvmDecisions.choose
    preds = {"1": (1.0, 0.95), "2": (0.5, 0.80), "3": (0.2, 0.75), "4": (0.9, 0.6), "5": (-0.1, 0.99)}
    java = java_predictions(jvm, preds)
    assert list(choose(java, 0.7, 5, 1.0)) == ["1", "2", "3"]  # "4": confidence 0.6; "5": negative score
    assert list(choose(java, 0.7, 3, 1.0)) == ["1", "2"]
    assert list(choose(java, 0.7, 2, 1.0)) == ["1"]
    assert list(choose(java, 0.7, 1, 1.0)) == []
    assert list(choose(java, 0.9, 5, 1.0)) == ["1"]
    assert list(choose(java, 0.0, 6, 1.0)) == ["1", "2", "3", "4"]  # p 0 keeps only the score test


@pytest.mark.parametrize("live, share, held", [
    (3, 0.25, 1),  # at least one
    (8, 0.25, 2),
    (12, 0.25, 3),
    (10, 0.3, 3),
    (4, 0.5, 2),
    (2, 0.25, 1),
    (4, 1.0, 3),  # never all
])
def test_the_rule_holds_at_most_its_share_of_the_live_executors(jvm, live, share, held):
    preds = {str(i): (1.0, 0.99 - i / 100) for i in range(live)}  # every executor flagged, "0" most confident
    chosen = list(jvm.dev.sparkrm.wrangler.JvmDecisions.choose(java_predictions(jvm, preds), 0.7, live, share))
    assert chosen == [str(i) for i in range(held)]


def java_predictions(jvm, predictions: dict):
    """``executor -> (score, confidence)`` as the ``Map<String, double[]>`` ``JvmDecisions.choose`` takes."""
    java = jvm.java.util.HashMap()
    for ex, sc in predictions.items():
        java.put(ex, doubles(jvm, sc))
    return java


def test_the_jvm_scores_an_exported_model_as_python_does_and_flags_by_the_rule(jvm, tmp_path):
    tasks, nodes = telemetry(seed=3, seconds=400)
    data = build_dataset(tasks, nodes, max_age_ms=2000)
    predictor = StragglerPredictor(min_node_tasks=50).fit(data)
    assert list(predictor.node_models_) == ["2"]  # "2" by its own model, the others by the multi-task one
    model = jvm.dev.sparkrm.wrangler.WranglerModel.load(str(predictor.save(tmp_path / "model.json")))
    rng = np.random.default_rng(0)
    rows = data.X[rng.choice(len(data), 40, replace=False)]
    rows[0, 1] = np.nan  # a counter missing from a sample
    rows[1] *= 5  # beyond the training range: clipped
    names = ["0", "1", "2", "7"] * 10  # "7": never seen in training
    workloads = ["default"] * 30 + ["other"] * 10
    scores, confidences = predictor.predict(rows, names, workloads)
    scored = [list(model.predict(doubles(jvm, row), name, workload)) for row, name, workload in zip(rows, names, workloads)]
    np.testing.assert_allclose([s for s, _ in scored], scores, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose([c for _, c in scored], confidences, rtol=1e-9, atol=1e-12)
    choose = jvm.dev.sparkrm.wrangler.JvmDecisions.choose
    for p in (0.0, 0.3, 0.7, 0.95):  # the JVM flags exactly what offline evaluation counts as flagged
        for start in range(0, 40, 4):
            batch = {str(i): (float(scores[i]), float(confidences[i])) for i in range(start, start + 4)}
            flagged = [ex for ex, (s, c) in batch.items() if is_flagged(s, c, p)]
            assert sorted(choose(java_predictions(jvm, batch), p, 5, 1.0)) == sorted(flagged)


def test_a_hold_expires_at_its_own_end_renews_up_to_the_cap_and_the_executor_then_rests_one_interval(jvm):
    p = Probe(jvm, guard=False)
    start = p.now
    assert p.holds.hold("1", 2000, 0.9) == "held" and p.java.withheld("1")
    p.at(start + 1999).java.tick()
    assert p.current() == ["1"]
    p.at(start + 2000).java.tick()
    assert [(h["executorId"], h["endReason"], h["durationMs"]) for h in p.ended()] == [("1", "expired", 2000)]
    assert not p.java.withheld("1")

    start = p.now
    assert p.holds.hold("2", 60_000, 0.99) == "held"
    p.at(start + 1000)
    assert p.holds.hold("2", 60_000, 0.99) == "renewed"
    p.at(start + CAP - 1).java.tick()
    assert p.current() == ["2"]
    p.at(start + CAP).java.tick()
    assert [(h["endReason"], h["durationMs"]) for h in p.ended()[1:]] == [("cap", CAP)]
    p.at(start + CAP + INTERVAL - 1)
    assert p.holds.hold("2", 1000, 0.99) == "resting"
    p.at(start + CAP + INTERVAL)
    assert p.holds.hold("2", 1000, 0.99) == "held"
    assert p.holds.release("2") and not p.holds.release("2")
    assert p.ended()[-1]["endReason"] == "released"


def test_the_last_open_executor_is_never_held_and_a_lost_one_ends_its_hold(jvm):
    p = Probe(jvm, guard=False)
    assert p.holds.hold("0", 5000, 0.9) == "held"
    assert p.holds.hold("1", 5000, 0.9) == "held"
    assert p.holds.hold("2", 5000, 0.9) == "last-active"
    assert p.holds.hold("7", 5000, 0.9) == "inactive"
    assert p.current() == ["0", "1"]
    p.java.remove("1")
    assert [(h["executorId"], h["endReason"]) for h in p.ended()] == [("1", "removed")]
    assert p.holds.hold("1", 1000, 0.9) == "inactive" and p.current() == ["0"]


def test_the_decisions_hold_a_flagged_executor_while_it_stays_flagged_and_release_it_after(jvm, models):
    p = Probe(jvm, guard=False)
    p.java.decisions().install(models["1"])
    for _ in range(4):
        p.at(p.now + INTERVAL).step()
    assert [(d["executorId"], d["why"], d["action"]) for d in p.decisions()] == [
        ("1", "model", "held")] + [("1", "model", "renewed")] * 3
    assert p.current() == ["1"] and p.decisions()[0]["confidence"] > 0.99
    p.java.decisions().install(models[""])  # a model that flags nobody
    p.at(p.now + INTERVAL).step()
    assert p.current() == [] and [h["endReason"] for h in p.ended()] == ["released"]
    p.java.decisions().install(models["12"])  # both flagged with the same confidence: "1" first, "2" too
    p.at(p.now + INTERVAL).step()
    assert p.current() == ["1", "2"]


def test_a_share_of_a_quarter_holds_one_of_three_flagged_executors(jvm, models):
    p = Probe(jvm, guard=False, share=0.25)
    p.java.decisions().install(models["12"])
    for _ in range(3):
        p.at(p.now + INTERVAL).step()
    assert p.current() == ["1"]
    assert {d["executorId"] for d in p.decisions()} == {"1"}


def test_hint_mode_holds_nothing_and_records_what_it_would_delay(jvm, models):
    p = Probe(jvm, guard=False)
    p.java.decisions().install(models["1"])
    p.java.decisions().configure(True, 0.7, "default")
    for _ in range(3):
        p.at(p.now + INTERVAL).step()
    assert [(d["executorId"], d["action"]) for d in p.decisions()] == [("1", "hint")] * 3
    assert p.current() == [] and p.ended() == []


def test_a_silent_executor_is_held_model_or_not_and_released_when_it_speaks_again(jvm):
    p = Probe(jvm)  # the guard is on and executor 2's tasks are not slow: a silent hold does not ask it
    for _ in range(3):
        p.at(p.now + INTERVAL).step()
    last_heard = p.now
    while p.now - last_heard <= 3000:  # silent: 3 intervals, at least 3 s, behind the others' newest sample
        assert p.decisions() == []
        p.at(p.now + INTERVAL).step(silent={"2"})
    assert [(d["executorId"], d["why"], d["action"], d["score"]) for d in p.decisions()] == [
        ("2", "silent", "held", None)]
    assert p.current() == ["2"]
    p.at(p.now + INTERVAL).step()
    assert p.current() == [] and [(h["executorId"], h["endReason"]) for h in p.ended()] == [("2", "released")]


def test_a_feed_late_for_every_executor_silences_no_one(jvm):
    p = Probe(jvm)
    for _ in range(2):
        p.at(p.now + INTERVAL).step()
    p.at(p.now + 10_000).java.decide()  # the driver paused: no sample from anyone for 10 s
    assert p.decisions() == [] and p.current() == []


def test_holds_of_a_slow_executor_stand(jvm, models):
    p = Probe(jvm)
    for _ in range(4):
        p.at(p.now + INTERVAL).step(slow={"1"})  # its tasks are seen to be slow before the model flags it
    p.java.decisions().install(models["1"])
    start = p.now
    for _ in range(28):  # 14 s
        p.at(p.now + INTERVAL).step(slow={"1"})
    assert p.refuted() == []
    assert {d["action"] for d in p.decisions()} <= {"held", "renewed", "resting"}
    p.holds.release("1")
    holds = p.ended()
    assert ("1", "cap") in {(h["executorId"], h["endReason"]) for h in holds}
    assert {(h["executorId"], h["endReason"]) for h in holds} <= {("1", "cap"), ("1", "released")}
    assert sum(h["durationMs"] for h in holds) > 0.8 * (p.now - start)  # held but for its rests after each cap


def test_a_hold_stands_when_the_slowness_begins_with_it(jvm, models):
    # Executor 1 runs fast for a whole guard window, then turns slow as the model flags it: as when node
    # counters show a burst before any task does. Only the tasks that run through the hold judge it.
    p = Probe(jvm)
    for _ in range(WINDOW // INTERVAL):
        p.at(p.now + INTERVAL).step()
    p.java.decisions().install(models["1"])
    for _ in range(20):
        p.at(p.now + INTERVAL).step(slow={"1"})
    assert p.refuted() == [] and p.decisions()[0]["action"] == "held"
    assert {h["endReason"] for h in p.ended()} == {"cap"}


def test_the_guard_stops_a_useless_model_from_holding_a_healthy_executor(jvm, models):
    p = Probe(jvm)
    for _ in range(4):
        p.at(p.now + INTERVAL).step()
    p.java.decisions().install(models["1"])
    start = p.now
    for _ in range(100):  # 50 s of a model that flags healthy executor 1 at every tick
        p.at(p.now + INTERVAL).step()
    holds = p.ended()
    # Each hold begins while executor 1 runs a task (its witness), and ends the moment that task ends unslow,
    # one interval later; the executor is then distrusted for 6 s, 12 s, 24 s.
    assert [(h["endReason"], h["durationMs"]) for h in holds] == [("unconfirmed", INTERVAL)] * 4
    refuted = p.refuted()
    assert [g["backoffMs"] for g in refuted] == [2 * CAP, 4 * CAP, 8 * CAP, 16 * CAP]
    assert [g["time"] for g in refuted] == [h["endTime"] for h in holds]
    assert all(g["executorId"] == "1" and g["tasks"] == 1 and g["executorMedian"] <= BETA * g["othersMedian"]
               for g in refuted)
    for hold, guard, after in zip(holds, refuted, holds[1:]):  # no hold within a back-off
        assert after["startTime"] >= hold["endTime"] + guard["backoffMs"]
    actions = [d["action"] for d in p.decisions()]
    assert set(actions) == {"held", "distrusted"} and actions.count("held") == 4  # the task's end refuted each
    assert sum(h["durationMs"] for h in holds) < 0.05 * (p.now - start)


def test_a_hold_that_stood_resets_the_back_off(jvm, models):
    p = Probe(jvm)
    for _ in range(4):
        p.at(p.now + INTERVAL).step()
    p.java.decisions().install(models["1"])
    p.at(p.now + INTERVAL).step()
    p.at(p.now + INTERVAL).step()  # refuted: back-off 2 caps
    assert [g["backoffMs"] for g in p.refuted()] == [2 * CAP]
    while not p.current():
        p.at(p.now + INTERVAL).step()
    for _ in range(CAP // INTERVAL):  # slow now: this hold stands to the cap
        p.at(p.now + INTERVAL).step(slow={"1"})
    assert p.ended()[-1]["endReason"] == "cap"
    for _ in range(WINDOW // INTERVAL + 2):  # fast again, and the slow tasks leave the window
        p.at(p.now + INTERVAL).step()
    assert [g["backoffMs"] for g in p.refuted()][-1] == 2 * CAP  # from one again, not four caps


def test_an_idle_executor_is_judged_by_its_recent_tasks_at_once(jvm, models):
    p = Probe(jvm)
    for _ in range(4):
        p.at(p.now + INTERVAL).step()
    p.at(p.now + INTERVAL).step(running=p.running)  # every task ends; none starts: the executors are idle
    for ex in p.executors:
        p.java.taskEnded(ex, "s", 1.0)
    p.running = []
    assert p.holds.hold("1", 2 * INTERVAL, 0.9) == "held"  # nothing witnesses the hold of an idle executor
    p.at(p.now + INTERVAL)
    assert p.holds.hold("1", 2 * INTERVAL, 0.9) == "unconfirmed"  # its own recent tasks were not slow
    assert [(h["endReason"], h["durationMs"]) for h in p.ended()] == [("unconfirmed", INTERVAL)]
    assert p.holds.hold("1", 2 * INTERVAL, 0.9) == "distrusted"


def test_holds_give_way_to_a_barrier_job_and_a_decommission(jvm):
    p = Probe(jvm, guard=False)
    assert p.holds.hold("1", 60_000, 0.9) == "held"
    p.java.barrierWaiting(True)
    p.at(p.now + 20).java.tick()
    assert [(h["endReason"], h["durationMs"]) for h in p.ended()] == [("barrier", 20)]
    assert p.holds.hold("1", 60_000, 0.9) == "barrier"
    p.java.barrierWaiting(False)
    assert p.holds.hold("1", 60_000, 0.9) == "held"
    p.java.parkDecommission("1")  # asked while it was held, parked by Spark
    p.at(p.now + 20).java.tick()
    assert p.ended()[-1]["endReason"] == "decommission" and p.java.decommissioned() == "1"
    assert p.holds.hold("2", 60_000, 0.9) == "held"
    assert p.holds.decommissioning("2")  # told by its executor on a signal: released, decommissioned
    assert p.ended()[-1]["endReason"] == "decommission" and p.java.decommissioned() == "1,2"


def test_under_dynamic_allocation_an_idle_executor_is_released_at_half_its_timeout(jvm):
    idle_limit = 5000  # half of executorIdleTimeout
    p = Probe(jvm, guard=False, idle_limit_ms=idle_limit, cap=60_000)
    p.java.taskStarted("1")
    assert p.holds.hold("1", 60_000, 0.9) == "held"
    p.at(p.now + 60_000).java.tick()  # busy: never idle, so the hold runs to its cap
    assert [(h["endReason"], h["durationMs"]) for h in p.ended()] == [("cap", 60_000)]
    p.java.taskEnded("1", "s", 1.0)
    idle_from = p.now
    p.at(idle_from + INTERVAL)
    assert p.holds.hold("1", 60_000, 0.9) == "held"
    p.at(idle_from + idle_limit - 1).java.tick()
    assert p.current() == ["1"]
    p.at(idle_from + idle_limit).java.tick()
    assert p.ended()[-1]["endReason"] == "idle" and p.current() == []
    assert p.holds.hold("1", 60_000, 0.9) == "idle"


def test_the_jvm_queue_wait_is_yaqs_estimator(jvm):
    rng = np.random.default_rng(7)
    wait = jvm.dev.sparkrm.wrangler.HoldsProbe.queueWait
    for _ in range(200):
        running = list(rng.uniform(-1, 10, rng.integers(0, 5)))
        queued = list(rng.uniform(0, 5, rng.integers(0, 8)))
        free = int(rng.integers(0, 2))
        assert wait(doubles(jvm, running), doubles(jvm, queued), free) == pytest.approx(
            queue_wait(running, queued, free_slots=free))


def priced(jvm, models, tasks: int) -> Probe:
    """A probe whose holds are priced against the queue, a model flagging executor 1, one stage of ``tasks``."""
    p = Probe(jvm, share=1.0, wait_aware=True)
    p.java.decisions().install(models["1"])
    p.java.stage("s", tasks)
    return p


def test_a_hold_that_makes_the_queue_wait_longer_than_the_straggle_it_avoids_is_not_placed(jvm, models):
    p = priced(jvm, models, 12)
    for task, ex in enumerate("012"):
        p.java.launch(task, ex, "s", task)
    p.at(p.now + 1000)
    for task, ex in enumerate("012"):
        p.java.finish(task, ex, "s")  # every task 1 s: executor 1 is not slow, so a hold claims beta
        p.java.launch(task + 3, ex, "s", task + 3)
        p.java.sample(ex, p.now, 50.0)
    p.java.decide()
    # six tasks wait: the last starts 700 ms later without executor 1, a straggle there costs (1.3 - 1) x 1 s
    delay = queue_wait([1000, 1000], [1000] * 5) - queue_wait([1000, 1000, BETA * 1000], [1000] * 5)
    assert [(d["executorId"], d["action"], d["delayMs"], d["avoidedMs"]) for d in p.decisions()] == [
        ("1", "waits-longer", pytest.approx(delay), pytest.approx(300))]
    assert delay == pytest.approx(700) and p.current() == []


def test_a_hold_is_placed_when_nothing_waits_or_its_executor_is_slow_enough(jvm, models):
    idle = priced(jvm, models, 3)
    for task, ex in enumerate("012"):
        idle.java.launch(task, ex, "s", task)
        idle.java.sample(ex, idle.now, 50.0)
    idle.java.decide()
    assert [(d["action"], d["delayMs"], d["avoidedMs"]) for d in idle.decisions()] == [("held", 0.0, None)]

    p = priced(jvm, models, 30)
    p.java.launch(100, "1", "s", 0)  # executor 1's task takes 4 s, the others' 1 s
    for second in range(4):
        for ex in "02":
            task = 2 * second + (ex == "2") + 1
            if second:
                p.java.finish(task - 2, ex, "s")
            p.java.launch(task, ex, "s", task)
        p.at(p.now + 1000)
    p.java.finish(100, "1", "s")
    for ex, task in (("0", 7), ("2", 8)):
        p.java.finish(task, ex, "s")
    for task, ex in enumerate("012", start=9):
        p.java.launch(task, ex, "s", task)
        p.java.sample(ex, p.now, 50.0)
    p.java.decide()
    # 18 tasks wait; executor 1 runs at 4x, so the straggle avoided (3 s) exceeds the delay (2 s)
    delay = queue_wait([1000, 1000], [1000] * 17) - queue_wait([1000, 1000, 4000], [1000] * 17)
    assert [(d["action"], d["delayMs"], d["avoidedMs"]) for d in p.decisions()] == [
        ("held", pytest.approx(delay), pytest.approx(3000))]
    assert delay == pytest.approx(2000) and p.current() == ["1"]
