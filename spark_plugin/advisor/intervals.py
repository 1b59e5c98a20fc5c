"""Predict with an interval: how far a predicted time may be off, from how far the model was off on held-out runs.

With a handful of runs no distribution can be fitted to the errors, and a conformal interval at 90% needs more
held-out runs than a user makes (nine, for a finite bound). So the interval is a rule, calibrated on the recorded
TPC-H and trainer runs and checked on jobs it was not calibrated on (``python -m benchmarks.advisor --workload
jobs``; coverage in benchmarks/results/advisor/README.md). Around a prediction ``p`` at ``m`` slots::

    [p·e^-h, p·e^h],   h = max(FLOOR, SPREAD · max_i |ln(measured_i / predicted_i)|) · (1 + WIDEN · d(m))

where the maximum runs over the chosen model's leave-one-out predictions of the runs (each run from the others)
and ``d(m)`` counts the doublings ``m`` lies beyond the measured slot counts (0 between them): the largest errors
are where a fit extrapolates, and beyond the runs nothing measured bounds it. With fewer than three runs nothing
can be held out and ``h`` is :data:`UNKNOWN`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Calibrated for 90% coverage on the recorded TPC-H (embedded 43a2935, hosts ec5facd) and SLAQ-trainer (0c05f8f,
#: 528a94e) runs, 52 jobs at four counts, each count held out and predicted from three (``python -m
#: benchmarks.advisor.calibrate``): 91.3% covered (84.6% between the measured counts), median width 1.05.
FLOOR = 0.15
SPREAD = 1.0
WIDEN = 2.0
#: Half-width (log scale) when fewer than three runs leave nothing to hold out: a factor of two either way.
UNKNOWN = math.log(2.0)
LEVEL = 0.90


@dataclass(frozen=True)
class Interval:
    """A predicted time with its :data:`LEVEL` interval; ``extrapolated`` when the slots lie beyond the runs'."""

    predicted_s: float
    low_s: float
    high_s: float
    extrapolated: bool

    @property
    def relative_width(self) -> float:
        """``high / low - 1``: 0.3 means the slower end is 30% above the faster."""
        return self.high_s / self.low_s - 1


def half_width(holdout_log_errors: list[float], slots: int, measured_slots) -> float:
    """``h`` above, for a prediction at ``slots`` by a model whose held-out log errors are given."""
    base = UNKNOWN if len(holdout_log_errors) < 2 else max(FLOOR, SPREAD * max(map(abs, holdout_log_errors)))
    return base * (1 + WIDEN * beyond(slots, measured_slots))


def beyond(slots: int, measured_slots) -> float:
    """Doublings ``slots`` lies outside the measured slot counts: 0 between them."""
    low, high = min(measured_slots), max(measured_slots)
    return max(0.0, math.log2(slots / high), math.log2(low / slots))


def interval(predicted_s: float, holdout_log_errors: list[float], slots: int, measured_slots) -> Interval:
    """The :data:`LEVEL` interval of a prediction at ``slots`` (see the module's rule)."""
    h = half_width(holdout_log_errors, slots, measured_slots)
    return Interval(predicted_s, predicted_s * math.exp(-h), predicted_s * math.exp(h),
                    extrapolated=beyond(slots, measured_slots) > 0)


def next_count(intervals: dict[int, Interval], advised: int, measured_slots) -> int | None:
    """The unmeasured slot count worth running next to settle the advice, or ``None`` when the runs settle it.

    The advised count itself when it was not measured; otherwise, among the unmeasured counts whose interval
    reaches below the advised count's upper end (any of them could be faster), the one with the widest interval.
    """
    measured = set(measured_slots)
    if advised not in measured:
        return advised
    ceiling = intervals[advised].high_s
    rivals = [m for m, iv in intervals.items() if m not in measured and iv.low_s < ceiling]
    return max(rivals, key=lambda m: (intervals[m].relative_width, -m)) if rivals else None
