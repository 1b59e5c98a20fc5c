"""Rotary-DLT's three estimators (thesis 3.3.2): epochs to a job's goal, its memory, its epoch time.

* :func:`epochs_to_reach`: the training-epoch estimator. With three or more epochs of its own, the job's
  live accuracy curve is fitted (both curve families of :mod:`spark_plugin.shared.curves`, through HyperDrive's
  :func:`spark_plugin.shared.curves.predict`, averaged) and read forward; before that, similar past jobs say
  how many epochs they took to reach the same accuracy (their median). ``None``: nothing to tell from.
* :class:`MemoryEstimator`: the batch-size-memory line of similar past jobs (least squares, one point:
  proportional), padded by a margin, so that a job chosen to train is not the one that runs out; without
  history, the static estimate the caller gives.
* :func:`epoch_seconds`: the job's own mean epoch time, else similar past jobs' mean, else ``None``.

Pure Python and NumPy: no TensorFlow.
"""

from __future__ import annotations

import numpy as np

from spark_plugin.shared.curves import predict
from .history import JobRecord

#: Epochs ahead the live curve is read; a goal further away counts as out of reach for now.
HORIZON = 200


def epochs_to_reach(accuracies, threshold: float, past: list[JobRecord]) -> float | None:
    """Further epochs the job needs to reach ``threshold`` (0 once reached), or None when nothing tells."""
    accuracies = list(accuracies)
    if accuracies and max(accuracies) >= threshold:
        return 0.0
    if len(accuracies) >= 3:
        predicted = predict(accuracies, HORIZON, mode="max")
        if predicted:
            mean = np.mean([m for m, _ in predicted], axis=0)
            reached = np.nonzero(mean >= threshold)[0]
            return float(reached[0] + 1) if reached.size else float(HORIZON)
    taken = [next((k + 1 for k, a in enumerate(r.accuracies) if a >= threshold), None) for r in past]
    taken = [t for t in taken if t is not None]
    if not taken:
        return None
    return max(float(np.median(taken)) - len(accuracies), 1.0)


class MemoryEstimator:
    """Memory a job of one kind needs at a batch size, from similar past jobs, padded by ``margin``."""

    def __init__(self, margin: float = 0.2):
        if margin < 0:
            raise ValueError(f"MemoryEstimator margin must be >= 0. Got {margin!r}.")
        self.margin = margin

    def estimate(self, batch_size: int, past: list[JobRecord], static_bytes: float) -> float:
        points = [(r.batch_size, r.memory_bytes) for r in past]
        if not points:
            return static_bytes * (1 + self.margin)
        b, m = np.array(points, dtype=float).T
        if np.ptp(b) == 0:
            value = float(np.mean(m)) * batch_size / b[0]
        else:
            slope, intercept = np.polyfit(b, m, 1)
            value = float(intercept + slope * batch_size)
        return max(value, 0.0) * (1 + self.margin)


def epoch_seconds(own: list[float], past: list[JobRecord]) -> float | None:
    """The job's mean epoch time, else its similar past jobs' mean, else None."""
    if own:
        return float(np.mean(own))
    times = [s for r in past for s in r.epoch_s]
    return float(np.mean(times)) if times else None
