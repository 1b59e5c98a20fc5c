"""The scorekeeper: what a task's keeper starts from, what the driver's takes back, kills and the target (no TensorFlow)."""

from __future__ import annotations

import itertools
import math

import pytest

from tf_packing import KillRule, Objective, Trial
from tf_packing.tuner.scorekeeper import Scorekeeper, TargetReached

ACCURACY = Objective("val_accuracy", "max")


def keeper(**kw) -> Scorekeeper:
    ticks = itertools.count()
    return Scorekeeper(ACCURACY, 9, lambda: float(next(ticks)), **kw)


def test_a_tasks_keeper_starts_from_its_trials_curves_and_the_best_so_far_and_merges_back():
    driver = keeper()
    a, b, c = Trial(0, {}, 1), Trial(1, {}, 1), Trial(2, {}, 1)
    driver.record(a, {"val_accuracy": 0.5})
    driver.record(c, {"val_accuracy": 0.8})
    task = driver.for_task([a, b], clock=lambda: 10.0)
    assert task.curves == {0: [0.5], 1: []} and task.trace == [] and task.reference() == 0.8
    task.record(a, {"val_accuracy": 0.6})
    task.record(b, {"val_accuracy": math.nan})
    driver.start_rung()
    driver.merge(task)
    assert driver.curves[0] == [0.5, 0.6] and driver.curves[2] == [0.8]
    assert driver.scores == {0: 0.6, 1: -math.inf}  # NaN ranks last
    assert [row[1] for row in driver.trace] == [0, 2, 0, 1]  # in time order


def test_kills_and_the_earliest_target_come_back_from_tasks():
    driver = keeper(early_kill=KillRule(0.3, 1), target=0.9)
    slow, fast, loser = Trial(0, {}, 0), Trial(1, {}, 0), Trial(2, {}, 0)
    late, early, poor = (driver.for_task([t], clock=lambda s=s: s) for t, s in ((slow, 5.0), (fast, 2.0), (loser, 1.0)))
    for task, trial in ((late, slow), (early, fast)):
        with pytest.raises(TargetReached):
            task.record(trial, {"val_accuracy": 0.95})
    assert poor.record(loser, {"val_accuracy": 0.1}) is True  # under the threshold after the boundary: killed
    for task in (late, early, poor):
        driver.merge(task)
    assert driver.target_reached == (1, 2.0)  # the earliest of the rung's tasks
    assert driver.killed == {2} and driver.labels == {2: "poor"}


def test_forget_drops_what_a_retried_pack_recorded_in_its_rung():
    k = keeper()
    trial = Trial(0, {}, 0, epochs_done=1)
    k.curves[0] = [0.4]
    k.record(trial, {"val_accuracy": 0.5})
    k.forget(trial)
    assert k.curves[0] == [0.4] and 0 not in k.scores


def test_a_missing_objective_names_the_metric_to_compile():
    with pytest.raises(ValueError, match=r"metrics=\['accuracy'\]"):
        keeper().record(Trial(0, {}, 0), {"val_loss": 0.3})
    assert keeper().record(Trial(0, {}, 0), {"loss": 0.3}) is False  # a training-only epoch end
