"""Per-job loss history and the quality normalizations SLAQ compares jobs by.

Loss ranges differ by orders of magnitude between jobs (K-Means from 300 to 0, SVM from 1 to 0.4,
thesis L987) and cannot be known before a job runs, so SLAQ never compares raw losses. It compares
*changes* in loss, each divided by the largest change the same job has shown so far (spec 3.2,
L989). Every quantity this module returns is therefore unchanged when a job's losses are multiplied
by a positive constant or shifted by a constant; the tests check a factor of 1000.

Three normalizations, all in ``[0, 1]``:

* :meth:`LossHistory.normalized_deltas`: the thesis's rule, used for Objective A,
  ``ΔL_k / max_{i <= k} ΔL_i`` with ``ΔL_k = (L_prev - L_k) / (k - k_prev)`` (per iteration, so a
  job that reports every few iterations is not favoured). A loss *increase* counts as no decrease
  (0), so noise never inflates progress. Before the job's first decrease the value is 0.
* :func:`normalized_loss`: the level ``(L - L_inf) / (L_0 - L_inf)`` (spec 7.5), which starts at 1
  and falls towards 0; it needs an asymptote ``L_inf`` (the predictor supplies a fitted one) and is
  used for Objective B and for the "average normalized loss" metric.
* :func:`reduction_fraction`: ``(L_0 - L_k) / (L_0 - L_final)``, the cumulative share of the
  job's total loss reduction, for the time-to-90%/95% metrics (spec 5.2: the thesis does not
  define it formally; this is its most direct reading).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["LossHistory", "normalized_deltas", "normalized_loss", "reduction_fraction"]


def normalized_deltas(losses, iterations=None) -> np.ndarray:
    """Each per-iteration loss decrease divided by the largest decrease seen up to it.

    Parameters
    ----------
    losses : array-like of float
        Loss after each reported iteration, in report order.
    iterations : array-like of int, default=None
        Iteration numbers of ``losses`` (strictly increasing). ``None`` means consecutive.

    Returns
    -------
    numpy.ndarray
        One value per *pair* of reports (``len(losses) - 1`` values), each in ``[0, 1]``.
        Increases count as 0; values before the first decrease are 0.

    Examples
    --------
    >>> normalized_deltas([10.0, 6.0, 4.0, 3.0, 3.5]).tolist()
    [1.0, 0.5, 0.25, 0.0]
    """
    drops = _per_iteration_drops(np.asarray(losses, dtype=float), iterations)
    running_max = np.maximum.accumulate(drops) if drops.size else drops
    out = np.zeros_like(drops)
    np.divide(drops, running_max, out=out, where=running_max > 0)
    return out


def normalized_loss(losses, floor: float, *, initial: float | None = None) -> np.ndarray:
    """The loss level rescaled so the job's start is 1 and its asymptote ``floor`` is 0.

    Parameters
    ----------
    losses : array-like of float
        Loss values to rescale (observed or predicted).
    floor : float
        The loss the job converges to, ``L_inf`` (a fitted asymptote, see
        :meth:`LossPredictor.floor <spark_plugin.slaq.predictor.LossPredictor.floor>`).
    initial : float, default=None
        ``L_0``, the job's first loss. ``None`` takes ``losses[0]``.

    Returns
    -------
    numpy.ndarray
        ``(L - floor) / (initial - floor)`` clipped to ``[0, 1]``; all ones when ``initial <= floor``
        (a job that has shown no reduction looks brand new, as a new job does in the thesis, L1146).
    """
    losses = np.asarray(losses, dtype=float)
    start = float(losses[0]) if initial is None else float(initial)
    span = start - float(floor)
    if not span > 0:
        return np.ones_like(losses)
    return np.clip((losses - floor) / span, 0.0, 1.0)


def reduction_fraction(losses, final_loss: float | None = None) -> np.ndarray:
    """Cumulative share of the total loss reduction reached after each report.

    Parameters
    ----------
    losses : array-like of float
        Loss after each reported iteration.
    final_loss : float, default=None
        The loss the job ends (or is predicted to end) at. ``None`` takes the lowest loss seen,
        which is right once the job has converged.

    Returns
    -------
    numpy.ndarray
        ``(L_0 - L_k) / (L_0 - final_loss)`` clipped to ``[0, 1]``; zeros when the job never
        went below its first loss.
    """
    losses = np.asarray(losses, dtype=float)
    if losses.size == 0:
        return losses
    final = float(np.min(losses)) if final_loss is None else float(final_loss)
    total = losses[0] - final
    if not total > 0:
        return np.zeros_like(losses)
    return np.clip((losses[0] - losses) / total, 0.0, 1.0)


class LossHistory:
    """What one training job has reported: iteration, loss, CPU time and data size per iteration.

    The scheduler keeps one per job and appends to it on every report; the predictor and the
    runtime model read it. Nothing here depends on the job's loss units.

    Attributes
    ----------
    iterations_, losses_ : numpy.ndarray
        Reported iteration numbers (strictly increasing) and losses.
    cpu_times_, data_sizes_, times_ : numpy.ndarray
        Aggregate worker CPU seconds, data processed (bytes, rows, or 1 for "one full pass") and
        wall-clock time of each report; NaN where not reported.
    max_delta_ : float
        Largest per-iteration loss decrease so far (0.0 before the first decrease).

    Examples
    --------
    >>> h = LossHistory()
    >>> for k, loss in enumerate([8.0, 4.0, 3.0]):
    ...     _ = h.record(k, loss, cpu_time_s=2.0, data_size=1.0)
    >>> h.max_delta_, h.normalized_deltas().tolist()
    (4.0, [1.0, 0.25])
    """

    def __init__(self):
        self._rows: list[tuple[float, float, float, float, float]] = []
        self._arrays: np.ndarray | None = None
        self.max_delta_ = 0.0

    def __len__(self) -> int:
        return len(self._rows)

    def record(self, iteration: int, loss: float, *, cpu_time_s: float | None = None,
               data_size: float | None = None, time_s: float | None = None) -> "LossHistory":
        """Append one finished iteration.

        Parameters
        ----------
        iteration : int
            The iteration number, greater than the last one recorded (gaps are allowed).
        loss : float
            The training loss after that iteration (any finite value, any units).
        cpu_time_s : float, default=None
            CPU seconds all workers spent on the iteration (teaches the runtime model its c).
        data_size : float, default=None
            Data the iteration processed, S in ``c * S / N``.
        time_s : float, default=None
            Wall-clock time of the report, for time-to-X% metrics.

        Returns
        -------
        LossHistory
            ``self``, so calls chain.

        Raises
        ------
        ValueError
            When ``iteration`` does not increase, ``loss`` is not finite, or a telemetry value is
            negative or not finite.
        """
        if not math.isfinite(loss):
            raise ValueError(f"loss must be a finite number. Got {loss!r} at iteration {iteration}. "
                             "Report the training objective, or skip iterations whose loss diverged.")
        if self._rows and not iteration > self._rows[-1][0]:
            raise ValueError(f"iteration must increase from one report to the next. Got {iteration!r} after "
                             f"{int(self._rows[-1][0])}. Report each finished iteration once, in order.")
        for name, value in (("cpu_time_s", cpu_time_s), ("data_size", data_size)):
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0. Got {value!r} at iteration {iteration}. "
                                 "Pass None when it was not measured.")
        if self._rows:
            prev_k, prev_loss = self._rows[-1][0], self._rows[-1][1]
            self.max_delta_ = max(self.max_delta_, (prev_loss - loss) / (iteration - prev_k))
        nan = math.nan
        self._rows.append((float(iteration), float(loss), nan if cpu_time_s is None else float(cpu_time_s),
                           nan if data_size is None else float(data_size), nan if time_s is None else float(time_s)))
        self._arrays = None
        return self

    def _column(self, i: int) -> np.ndarray:
        if self._arrays is None:
            self._arrays = np.array(self._rows, dtype=float).reshape(-1, 5).T.copy()
        return self._arrays[i]

    iterations_ = property(lambda self: self._column(0), doc="Reported iteration numbers.")
    losses_ = property(lambda self: self._column(1), doc="Reported losses.")
    cpu_times_ = property(lambda self: self._column(2), doc="CPU seconds per report (NaN: not measured).")
    data_sizes_ = property(lambda self: self._column(3), doc="Data size per report (NaN: not measured).")
    times_ = property(lambda self: self._column(4), doc="Wall-clock time per report (NaN: not given).")

    def deltas(self) -> np.ndarray:
        """Per-iteration loss decreases ``(L_prev - L_k) / (k - k_prev)``, one per pair of reports."""
        return _per_iteration_drops(self.losses_, self.iterations_, clip=False)

    def normalized_deltas(self) -> np.ndarray:
        """:func:`normalized_deltas` of this job (spec 3.2); values in ``[0, 1]``."""
        return normalized_deltas(self.losses_, self.iterations_)

    def normalized_loss(self, floor: float) -> np.ndarray:
        """:func:`normalized_loss` of every report, with the given asymptote ``floor``."""
        return normalized_loss(self.losses_, floor)

    def reduction_fraction(self, final_loss: float | None = None) -> np.ndarray:
        """:func:`reduction_fraction` of every report."""
        return reduction_fraction(self.losses_, final_loss)

    def reaching(self, fraction: float, final_loss: float | None = None) -> tuple[float, float] | None:
        """The first report at which the job had ``fraction`` of its total loss reduction.

        Parameters
        ----------
        fraction : float
            In ``(0, 1]``, e.g. 0.9 or 0.95 for the thesis's time-to-90%/95% metrics.
        final_loss : float, default=None
            As in :func:`reduction_fraction`.

        Returns
        -------
        tuple of (float, float) or None
            ``(iteration, time_s)`` of that report (``time_s`` is NaN if not recorded), or
            ``None`` if not reached yet.
        """
        if not 0 < fraction <= 1:
            raise ValueError(f"fraction must be in (0, 1]. Got {fraction!r}. Use e.g. 0.9 for 90%.")
        reached = np.flatnonzero(self.reduction_fraction(final_loss) >= fraction - 1e-12)
        if not reached.size or (final_loss is None and not self.max_delta_ > 0):
            return None
        i = int(reached[0])
        return float(self.iterations_[i]), float(self.times_[i])


def _per_iteration_drops(losses: np.ndarray, iterations=None, *, clip: bool = True) -> np.ndarray:
    """``(L_prev - L_k) / (k - k_prev)``, clipped at 0 unless ``clip`` is False."""
    if losses.size < 2:
        return np.zeros(0)
    steps = 1.0 if iterations is None else np.diff(np.asarray(iterations, dtype=float))
    drops = -np.diff(losses) / steps
    return np.maximum(drops, 0.0) if clip else drops
