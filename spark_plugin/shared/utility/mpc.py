"""Model-predictive lag over a short horizon, with VideoStorm's correction of mis-estimated demand (Eq. 2.2).

A job that needs ``demand`` units to keep up and gets ``allocation`` falls behind (or catches up) at
``1 - allocation / demand`` seconds per second: after a horizon T its lag is
``L + T - T * allocation / (mu * demand)``, never below zero. ``mu`` is the running average of actual to
predicted demand (:class:`DemandCorrection`): a job whose demand was underestimated by half gets
``mu = 1.5``, and the allocator sees it fall behind as it really does.
"""

from __future__ import annotations

from collections import deque

import numpy as np


def predicted_lag(lag_s: float, horizon_s: float, allocation, demand: float, mu: float = 1.0):
    """Lag after ``horizon_s`` with ``allocation`` units (scalar or array), for a job that needs ``demand``.

    >>> predicted_lag(10.0, 5.0, 2, demand=4)      # half of what it needs: 2.5 s more behind
    12.5
    >>> predicted_lag(10.0, 5.0, 8, demand=4)      # twice: catches up 5 s
    5.0
    """
    if horizon_s < 0 or demand <= 0 or mu <= 0:
        raise ValueError(f"predicted_lag needs horizon_s >= 0, demand > 0 and mu > 0. Got {horizon_s!r}, "
                         f"{demand!r}, {mu!r}.")
    lag = np.maximum(lag_s + horizon_s - horizon_s * np.asarray(allocation, dtype=float) / (mu * demand), 0.0)
    return float(lag) if np.ndim(lag) == 0 else lag


class DemandCorrection:
    """The running average of actual over predicted demand (VideoStorm's mu), over the last ``window`` epochs.

    >>> mu = DemandCorrection()
    >>> mu.update(actual=3.0, predicted=2.0).update(actual=2.0, predicted=2.0).mu
    1.25
    """

    def __init__(self, window: int = 10):
        if window < 1:
            raise ValueError(f"DemandCorrection window must be >= 1 epoch. Got {window!r}.")
        self._ratios: deque[float] = deque(maxlen=window)

    def update(self, actual: float, predicted: float) -> "DemandCorrection":
        """Adds one epoch's actual and predicted demand (a non-positive prediction is skipped)."""
        if predicted > 0 and actual >= 0:
            self._ratios.append(actual / predicted)
        return self

    @property
    def mu(self) -> float:
        """The correction factor; 1.0 before any epoch."""
        return float(np.mean(self._ratios)) if self._ratios else 1.0
