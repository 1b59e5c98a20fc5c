"""Rotary-DLT's training progress phi of a job toward its completion criterion (thesis Algorithm 6).

* runtime: the epochs (or seconds) run over the budget's;
* accuracy: the epochs run over the epochs the job is estimated to need in all (run plus
  :func:`.estimators.epochs_to_reach`); with no estimate yet, over the most epochs it may run;
* convergence: the same, the accuracy to reach being the plateau the live curve predicts (where the
  per-epoch gain falls below the criterion's delta).

The most epochs a job may run is its budget in epochs, or its budget in seconds divided by its epoch
time; without either, :data:`DEFAULT_MAX_EPOCHS`. phi lies in [0, 1].
"""

from __future__ import annotations

import numpy as np

from spark_plugin.shared import criteria as crit

from spark_plugin.shared.curves import predict
from .estimators import HORIZON, epochs_to_reach
from .history import JobRecord

DEFAULT_MAX_EPOCHS = 50


def max_epochs(criterion: crit.Criterion, epoch_s: float | None) -> float:
    budget = criterion.budget
    if budget is not None and budget.epochs is not None:
        return float(budget.epochs)
    if budget is not None and budget.seconds is not None and epoch_s:
        return max(budget.seconds / epoch_s, 1.0)
    return float(DEFAULT_MAX_EPOCHS)


def epochs_needed(criterion: crit.Criterion, accuracies, past: list[JobRecord]) -> float | None:
    """Further epochs the job needs to meet ``criterion`` (None: nothing tells, or a runtime in seconds)."""
    if criterion.kind == "runtime":
        epochs = criterion.budget.epochs
        return None if epochs is None else float(max(epochs - len(accuracies), 0))
    if criterion.kind == "accuracy":
        return epochs_to_reach(accuracies, criterion.threshold, past)
    if criterion.kind == "convergence" and len(accuracies) >= 3:
        predicted = predict(list(accuracies), HORIZON, mode="max")
        if predicted:
            mean = np.mean([m for m, _ in predicted], axis=0)
            gains = np.abs(np.diff(np.concatenate([[accuracies[-1]], mean])))
            flat = np.nonzero(gains < criterion.delta)[0]
            return float(flat[0] + 1) if flat.size else float(HORIZON)
    return None


def reachable(criterion: crit.Criterion, epochs: int, elapsed_s: float, needed: float | None,
              epoch_s: float | None) -> bool:
    """Whether the job is predicted to meet its criterion within its budget (True when nothing tells).

    A job predicted never to get there, or not before its budget runs out, is what the thesis calls
    converged: the threshold rule no longer waits for it (:func:`.policies.order`).
    """
    if needed is None:
        return True
    if needed >= HORIZON:
        return False
    budget = criterion.budget
    if budget is not None and budget.epochs is not None:
        return epochs + needed <= budget.epochs
    if budget is not None and budget.seconds is not None and epoch_s:
        return elapsed_s + needed * epoch_s <= budget.seconds
    return True


def progress(criterion: crit.Criterion, epochs: int, elapsed_s: float, needed: float | None,
             epoch_s: float | None) -> float:
    """phi in [0, 1] (Algorithm 6), given the further epochs the job needs (:func:`epochs_needed`)."""
    if criterion.kind == "runtime":
        budget = criterion.budget
        done = epochs / budget.epochs if budget.epochs is not None else elapsed_s / budget.seconds
        return float(min(done, 1.0))
    total = epochs + needed if needed is not None else max_epochs(criterion, epoch_s)
    return float(min(epochs / total, 1.0)) if total > 0 else 1.0
