"""How much a job's loss will fall in the next epoch with N cores: loss curves and the runtime model.

SLAQ decides every few seconds while iterations take tens to hundreds of ms, so it must predict
several iterations ahead (spec 3.4). Two models combine (spec 3.8):

* :class:`RuntimeModel`: an iteration with N cores takes ``c * S / N`` seconds (spec 3.3, L1009)
  plus an overhead that may grow with N (fitted, IPSO's scale-out term),
  with ``c`` learned online as an exponentially weighted mean of ``cpu_time / S``; so N cores
  finish ``epoch_s * N / (c * S)`` iterations in an epoch, a *continuous* count (spec 7.4), so
  that one more core always changes the prediction.
* :class:`LossPredictor`: the loss after those iterations, from a curve fitted to the job's recent
  losses with weights ``decay ** (k_last - k)`` that favour recent iterations, refitted whenever
  the job reported something new (fits are cached per job and report count). Both families of the
  thesis are fitted, ``1/(a k^2 + b k + c) + d`` and ``mu^(k - b) + c``, and the one with the
  lower weighted residual wins unless the job declares its family. Short histories (fewer than
  ``min_points`` reports) and non-monotone ones fall back to the thesis's *strawman*: every future
  iteration repeats the last per-iteration drop. A job with no drop yet gets the optimistic prior
  of spec 7.2: one "largest drop" per iteration.

:meth:`LossPredictor.forecast` returns a :class:`Forecast`, whose :meth:`~Forecast.reduction`
(normalized loss reduction, Objective A) and :meth:`~Forecast.normalized_loss` (Objective B) take
an iteration count; :func:`epoch_curve` composes it with the runtime model into the per-core
curve :mod:`.allocator` wants.

Error metric (:func:`reduction_error`): ``|L_pred - L_true| / (L_0 - L_true)``, the relative error
of the predicted cumulative loss reduction ``L_0 - L``; unlike ``|L_pred - L_true| / L_true`` it
does not depend on the loss's offset or units. The tests hold it under 5% ten iterations ahead on
synthetic O(1/k) and O(mu^k) traces (the thesis reports 3.5%, L1039).
"""

from __future__ import annotations

import logging
import math
import weakref
from dataclasses import dataclass

import numpy as np

from ._checks import check_params
from ..shared.curves import EXPONENTIAL, SUBLINEAR, CurveFit, exponential, fit_family, sublinear
from .quality import LossHistory

__all__ = ["CurveFit", "Forecast", "LossPredictor", "RuntimeModel", "epoch_curve", "exponential",
           "reduction_error", "sublinear"]

_log = logging.getLogger(__name__)

AUTO = "auto"
STRAWMAN = "strawman"
PRIOR = "prior"
CONVERGED = "converged"
#: A last drop this small, relative to the job's largest, means the job has stopped improving:
#: Lloyd's iterations repeat the same loss once assignments stop changing, and a fitted curve
#: would go on predicting the drops it has seen.
CONVERGED_DROP = 1e-9


class RuntimeModel:
    """Iteration time ``overhead + c * S / N`` with ``c`` learned online from CPU time and data size.

    Parameters
    ----------
    smoothing : float, default=0.3
        Weight of the newest sample in the exponentially weighted mean of ``cpu_time / S``; 1.0
        keeps only the latest iteration.
    prior_cpu_s : float, default=1.0
        CPU seconds per iteration assumed before the job has reported any, so a new job can be
        scheduled at all.
    scaling : {"ipso", "linear"}, default="ipso"
        ``"ipso"``: the overhead grows with the cores, ``serial + q * N`` (IPSO's scale-out term,
        :mod:`spark_plugin.advisor.models`), fitted without negative parts on the overheads seen at
        each core count once two or more counts have run; until then as linear. ``"linear"``: one
        overhead for every core count (the thesis's ``c * S / N`` plus the overhead below). On the
        four SLAQ trainers at 1-4 cores, each count's iteration time predicted from the other counts'
        iterations, the median error is 10.1% for ``"ipso"`` and 26.5% for ``"linear"``
        (``python -m benchmarks.advisor --workload slaq``, benchmarks/results/advisor).

    Attributes
    ----------
    c_ : float or None
        Learned CPU seconds per unit of data (``None`` before the first sample).
    data_size_ : float or None
        The latest data size per iteration ``S``.
    n_samples_ : int
        Samples learned from.
    overhead_s_ : float
        Learned wall seconds per iteration that no core count shortens (0.0 until wall times
        are reported): on Spark, scheduling the iteration's job, starting its tasks and
        collecting their results. The thesis's ``c * S / N`` assumes compute dominates; with
        small data on few cores this term is often the larger one, so ignoring it would
        predict hundreds of iterations per epoch where a job runs a few.
    scale_out_s_ : float
        With ``scaling="ipso"``, the wall seconds each core adds to an iteration (``q``; 0.0 otherwise).
    overheads_ : dict
        Core count -> exponentially weighted mean overhead (wall time less CPU time over cores) seen at it.

    Examples
    --------
    >>> m = RuntimeModel(smoothing=1.0).update(8.0, data_size=4.0)
    >>> m.c_, m.iteration_time(4), float(m.iterations(4, epoch_s=3.0))
    (2.0, 2.0, 1.5)
    """

    _constraints = {"smoothing": (float, 0, 1, "right"), "prior_cpu_s": (float, 0, None, "neither"),
                    "scaling": frozenset({"linear", "ipso"})}

    def __init__(self, *, smoothing: float = 0.3, prior_cpu_s: float = 1.0, scaling: str = "ipso"):
        self.smoothing = smoothing
        self.prior_cpu_s = prior_cpu_s
        self.scaling = scaling
        self.c_: float | None = None
        self.data_size_: float | None = None
        self.n_samples_ = 0
        self.overhead_s_ = 0.0
        self.scale_out_s_ = 0.0
        self.overheads_: dict[int, float] = {}

    def update(self, cpu_time_s: float, data_size: float = 1.0, *, wall_s: float | None = None,
               cores: int | None = None) -> "RuntimeModel":
        """Learn from one finished iteration that used ``cpu_time_s`` CPU seconds on ``data_size`` data.

        With the iteration's wall time ``wall_s`` on ``cores`` cores, also learn the per-iteration
        overhead as the part of the wall time that the CPU time spread over the cores does not explain.
        """
        check_params(self, self._constraints)
        if not (math.isfinite(cpu_time_s) and cpu_time_s > 0):
            raise ValueError(f"cpu_time_s must be a finite number > 0. Got {cpu_time_s!r}. "
                             "Sum executorCpuTime over the iteration's tasks, in seconds.")
        if not (math.isfinite(data_size) and data_size > 0):
            raise ValueError(f"data_size must be a finite number > 0. Got {data_size!r}. "
                             "Pass bytes or rows processed, or 1.0 for one full pass.")
        sample = cpu_time_s / data_size
        self.c_ = sample if self.c_ is None else self._smooth(self.c_, sample)
        if wall_s is not None and cores:
            overhead = max(float(wall_s) - cpu_time_s / cores, 0.0)
            first, seen = not self.overheads_, self.overheads_.get(int(cores))
            self.overheads_[int(cores)] = overhead if seen is None else self._smooth(seen, overhead)
            if self.scaling == "ipso" and len(self.overheads_) >= 2:
                self._fit_scale_out()
            else:
                self.overhead_s_ = overhead if first else self._smooth(self.overhead_s_, overhead)
        self.data_size_ = float(data_size)
        self.n_samples_ += 1
        return self

    def _smooth(self, mean: float, sample: float) -> float:
        return (1 - self.smoothing) * mean + self.smoothing * sample

    def _fit_scale_out(self) -> None:
        """``overhead(N) = serial + q * N`` through the per-count overheads, both parts at least zero."""
        from scipy.optimize import nnls

        cores = np.array(sorted(self.overheads_), dtype=float)
        (serial, q), _ = nnls(np.column_stack([np.ones_like(cores), cores]),
                              np.array([self.overheads_[int(n)] for n in cores]))
        self.overhead_s_, self.scale_out_s_ = float(serial), float(q)

    def fit(self, history: LossHistory) -> "RuntimeModel":
        """Relearn ``c`` from every report of ``history`` that carries a CPU time (data size 1 if absent)."""
        self.c_, self.data_size_, self.n_samples_, self.overhead_s_ = None, None, 0, 0.0
        self.scale_out_s_, self.overheads_ = 0.0, {}
        for cpu, size in zip(history.cpu_times_, history.data_sizes_):
            if math.isfinite(cpu) and cpu > 0:
                self.update(float(cpu), float(size) if math.isfinite(size) and size > 0 else 1.0)
        return self

    def iteration_time(self, cores, data_size: float | None = None):
        """Predicted wall seconds of one iteration on ``cores`` cores: overhead (+ ``q * N``) + ``c * S / N``
        (array-like allowed)."""
        cores = np.asarray(cores, dtype=float)
        if self.c_ is None:
            cpu = self.prior_cpu_s
        else:
            cpu = self.c_ * (self.data_size_ if data_size is None else data_size)
        with np.errstate(divide="ignore"):
            out = np.where(cores > 0, self.overhead_s_ + self.scale_out_s_ * cores + cpu / np.maximum(cores, 1e-300),
                           np.inf)
        return float(out) if out.ndim == 0 else out

    def iterations(self, cores, epoch_s: float, data_size: float | None = None):
        """Iterations ``cores`` cores finish in ``epoch_s`` seconds: ``epoch_s / iteration_time``, continuous."""
        return epoch_s / self.iteration_time(cores, data_size)


@dataclass(frozen=True)
class Forecast:
    """A job's predicted losses from its latest report on, in iterations ahead.

    Attributes
    ----------
    method : str
        ``"sublinear"`` or ``"exponential"`` (a curve fit), ``"strawman"`` (repeat the last
        drop), ``"converged"`` (the last iteration changed nothing: no more drops) or ``"prior"``
        (no drop yet: assume one largest drop per iteration).
    fit : CurveFit or None
        The curve, when ``method`` is a family.
    last_loss, initial_loss : float
        The latest and first reported loss (NaN without reports).
    scale : float
        The job's largest per-iteration drop, the unit of :meth:`reduction` (1.0 before any drop).
    floor : float
        Predicted asymptote ``L_inf``: the fitted one; for the strawman the 1/k tail estimate
        ``L_last - drop * (k_last - k_first)`` (exact for an O(1/k) loss); for the prior
        ``L_last``.
    """

    method: str
    fit: CurveFit | None
    k_last: float
    last_loss: float
    initial_loss: float
    scale: float
    drop: float  # per-iteration drop the strawman repeats (>= 0)
    floor: float

    def loss(self, ahead):
        """Predicted loss ``ahead`` iterations after the latest report (flat for the prior; NaN without reports)."""
        ahead = np.asarray(ahead, dtype=float)
        if self.fit is not None:
            return self.fit(self.k_last + ahead)
        return self.last_loss - self.drop * ahead

    def reduction(self, ahead):
        """Predicted loss reduction over the next ``ahead`` iterations, in units of the largest drop.

        Used for Objective A; for a curve fit, ``(f(k) - f(k + ahead)) / scale``.
        """
        ahead = np.maximum(np.asarray(ahead, dtype=float), 0.0)
        if self.method == PRIOR:
            return ahead * 1.0
        if self.fit is not None:
            return (self.fit(self.k_last) - self.fit(self.k_last + ahead)) / self.scale
        return ahead * (self.drop / self.scale)

    def normalized_loss(self, ahead):
        """Predicted ``(L - L_inf) / (L_0 - L_inf)`` after ``ahead`` more iterations, in ``[0, 1]``.

        Used for Objective B. The prior is ``1 / (1 + ahead)`` (a new job starts at 1.0, L1146).
        """
        ahead = np.maximum(np.asarray(ahead, dtype=float), 0.0)
        if self.method == PRIOR:
            return 1.0 / (1.0 + ahead)
        span = self.initial_loss - self.floor
        if not span > 0:
            return np.zeros_like(ahead)
        return np.clip((self.loss(ahead) - self.floor) / span, 0.0, 1.0)


class LossPredictor:
    """Weighted curve fitting of a job's loss history, with the strawman as fallback (spec 3.4, 7.1-7.3).

    Parameters
    ----------
    family : {"auto", "sublinear", "exponential"}, default="auto"
        The curve family; ``"auto"`` fits both and keeps the lower weighted residual (for jobs
        whose optimizer's convergence class is unknown, e.g. GBT or LDA).
    window : int, default=30
        Latest reports fitted (spec 7.1 proposes 20-30).
    decay : float, default=0.9
        Weight of a report ``j`` iterations old is ``decay ** j``.
    min_points : int, default=5
        Fewer reports than this use the strawman.
    max_rises : float, default=0.34
        Share of the window's steps that may *raise* the loss by more than 1% of the largest drop
        before the history counts as non-monotone and falls back to the strawman.

    Examples
    --------
    >>> from spark_plugin.slaq.quality import LossHistory
    >>> h = LossHistory()
    >>> for k in range(1, 21):
    ...     _ = h.record(k, 2.0 * 0.8 ** k + 0.5)
    >>> f = LossPredictor().forecast(h)
    >>> f.method, round(float(f.loss(10)), 4), round(2.0 * 0.8 ** 30 + 0.5, 4)
    ('exponential', 0.5025, 0.5025)
    """

    _constraints = {
        "family": frozenset({AUTO, SUBLINEAR, EXPONENTIAL}),
        "window": (int, 5, None, "both"),
        "decay": (float, 0, 1, "right"),
        "min_points": (int, 5, None, "both"),
        "max_rises": (float, 0, 1, "both"),
    }

    def __init__(self, family: str = AUTO, *, window: int = 30, decay: float = 0.9, min_points: int = 5,
                 max_rises: float = 0.34):
        self.family = family
        self.window = window
        self.decay = decay
        self.min_points = min_points
        self.max_rises = max_rises
        self._cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def forecast(self, history: LossHistory) -> Forecast:
        """Fit (or reuse the fit for this many reports of) ``history`` and return its :class:`Forecast`."""
        check_params(self, self._constraints)
        key = (len(history), self.family, self.window, self.decay, self.min_points, self.max_rises)
        cached = self._cache.get(history)
        if cached is not None and cached[0] == key:
            return cached[1]
        result = self._forecast(history)
        self._cache[history] = (key, result)
        return result

    def predict(self, history: LossHistory, ahead):
        """Predicted loss ``ahead`` iterations after the latest report, in the job's units."""
        return self.forecast(history).loss(ahead)

    def floor(self, history: LossHistory) -> float:
        """The loss ``history`` is predicted to converge to (see :attr:`Forecast.floor`)."""
        return self.forecast(history).floor

    def _forecast(self, history: LossHistory) -> Forecast:
        n = len(history)
        if n == 0:
            return Forecast(PRIOR, None, 0.0, math.nan, math.nan, 1.0, 0.0, math.nan)
        k, losses = history.iterations_, history.losses_
        scale = history.max_delta_
        last, first = float(losses[-1]), float(losses[0])
        if not scale > 0:
            return Forecast(PRIOR, None, float(k[-1]), last, first, 1.0, 0.0, last)
        drops = history.deltas()
        if abs(float(drops[-1])) <= CONVERGED_DROP * scale:
            return Forecast(CONVERGED, None, float(k[-1]), last, first, scale, 0.0, last)
        drop = max(float(drops[-1]), 0.0)
        strawman = Forecast(STRAWMAN, None, float(k[-1]), last, first, scale, drop,
                            last - drop * (k[-1] - k[0]))
        if n < self.min_points:
            return strawman
        kw, lw = k[-self.window:], losses[-self.window:]
        rises = np.count_nonzero(np.diff(lw) > 0.01 * scale)
        if lw[0] <= lw[-1] or rises > self.max_rises * (len(lw) - 1):
            _log.debug("strawman: %d of %d steps raise the loss", rises, len(lw) - 1)
            return strawman
        weights = self.decay ** (kw[-1] - kw)
        families = (SUBLINEAR, EXPONENTIAL) if self.family == AUTO else (self.family,)
        fits = [f for f in (fit_family(fam, kw, lw, weights, scale) for fam in families) if f is not None]
        if not fits:
            _log.warning("strawman: curve fitting failed for every family on %d points", len(kw))
            return strawman
        best = min(fits, key=lambda f: f.residual)
        return Forecast(best.family, best, float(k[-1]), last, first, scale, drop, best.floor)


def epoch_curve(forecast: Forecast, runtime: RuntimeModel, epoch_s: float, *, objective: str = "reduction"):
    """The per-core curve :mod:`.allocator` takes: predicted value after one epoch on ``n`` cores.

    Parameters
    ----------
    forecast : Forecast
        The job's forecast.
    runtime : RuntimeModel
        The job's runtime model, turning ``n`` cores into ``epoch_s * n / (c * S)`` iterations.
    epoch_s : float
        Scheduling epoch length T in seconds.
    objective : {"reduction", "loss"}, default="reduction"
        ``"reduction"``: normalized loss reduction (Objective A); ``"loss"``: normalized loss at the
        end of the epoch (Objective B).

    Returns
    -------
    callable
        ``curve(n)`` for an integer array ``n`` of core counts, vectorized.
    """
    if not (math.isfinite(epoch_s) and epoch_s > 0):
        raise ValueError(f"epoch_s must be a finite number of seconds > 0. Got {epoch_s!r}. Use e.g. 2.0.")
    if objective == "reduction":
        return lambda n: forecast.reduction(runtime.iterations(n, epoch_s))
    if objective == "loss":
        return lambda n: forecast.normalized_loss(runtime.iterations(n, epoch_s))
    raise ValueError(f"objective must be 'reduction' or 'loss'. Got {objective!r}.")


def reduction_error(initial_loss: float, true_loss, predicted_loss):
    """Relative error of a predicted cumulative loss reduction: ``|L_pred - L_true| / (L_0 - L_true)``.

    Independent of the loss's units and offset. NaN where the true reduction is not positive.
    """
    true_loss = np.asarray(true_loss, dtype=float)
    span = initial_loss - true_loss
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(span > 0, np.abs(np.asarray(predicted_loss, dtype=float) - true_loss) / span, np.nan)
    return float(out) if out.ndim == 0 else out
