"""How close a progressive answer is: the true accuracy, and Rotary's envelope estimate of it.

True accuracy (thesis ch. 3.3.1) compares each aggregate cell of the exact answer with the
estimate of the same group: ``min(est / exact, exact / est)`` (the ratio either way, since scaled
estimates overshoot), 0 for a group not in the estimate yet or of the other sign, 1 for two zeros;
averaged over cells, with optional per-column weights.

The envelope estimate needs no exact answer: per cell, ``p / q`` with p and q the smallest and
largest magnitude over the last ``window`` snapshots (0 until the window is full, when q = 0, or
when the sign changed), averaged over the cells of the latest answer. The thesis leaves the window
open; the author's code runs with 3.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import pandas as pd

from .spec import WINDOW, QuerySpec


def true_accuracy(estimate: pd.DataFrame, exact: pd.DataFrame, spec: QuerySpec, weights: dict | None = None) -> float:
    """Mean cell accuracy of ``estimate`` against ``exact`` (both with the spec's columns)."""
    keys = list(spec.keys)
    truth = exact.set_index(keys) if keys else exact
    est = estimate.set_index(keys) if keys else estimate
    est = est.reindex(truth.index)
    scores, total_weight = 0.0, 0.0
    for column in spec.aggregates:
        w = (weights or {}).get(column, 1.0)
        e = est[column].to_numpy(dtype=float, na_value=np.nan)
        t = truth[column].to_numpy(dtype=float)
        scores += w * _ratio(e, t).sum()
        total_weight += w * len(t)
    return scores / total_weight if total_weight else 1.0


def _ratio(estimate: np.ndarray, truth: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.minimum(estimate / truth, truth / estimate)
    r = np.where((estimate == 0) & (truth == 0), 1.0, r)
    return np.nan_to_num(np.where(r > 0, r, 0.0), nan=0.0)


class Envelope:
    """Rotary's online accuracy estimate over a sliding window of snapshots."""

    def __init__(self, spec: QuerySpec, window: int = 3):
        WINDOW.check(window, what="the envelope window")
        self.spec, self.window = spec, window
        self._recent: deque = deque(maxlen=window)

    def add(self, result: pd.DataFrame) -> float:
        """Take the next snapshot's answer and return the estimated accuracy."""
        keys = [k for k in self.spec.keys if k in result.columns]  # a derived spec may group by unshown keys
        cells = result.set_index(keys) if keys else result
        if not cells.index.is_unique:
            cells = cells.reset_index(drop=True)
        self._recent.append(cells[self.spec.aggregates].apply(pd.to_numeric, errors="coerce").astype(float))
        return self.estimate()

    def estimate(self) -> float:
        if len(self._recent) < self.window:
            return 0.0
        latest = self._recent[-1]
        stack = np.stack([frame.reindex(latest.index).to_numpy() for frame in self._recent])
        magnitude = np.abs(stack)
        p, q = np.min(magnitude, axis=0), np.max(magnitude, axis=0)
        same_sign = (np.all(stack >= 0, axis=0) | np.all(stack <= 0, axis=0)) & ~np.isnan(stack).any(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(same_sign & (q > 0), p / q, 0.0)
        ratio = np.where(same_sign & (q == 0), 1.0, ratio)  # a cell that stayed exactly 0
        return float(np.nan_to_num(ratio).mean()) if ratio.size else 0.0
