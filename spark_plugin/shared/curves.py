"""Learning curves: weighted fits of two curve families, shared by SLAQ, HyperDrive and Rotary-DLT.

SLAQ's loss predictor (:mod:`spark_plugin.slaq.predictor`, spec 3.4) fits a job's loss curve to
predict the next epoch's loss reduction; HyperDrive's terminator (:mod:`tf_packing.tuner.hyperdrive`)
fits a trial's validation curve (accuracy negated, so that it falls like a loss) to predict where it
ends and how sure that is. Both read the same :class:`CurveFit`: its value at any ``k`` and, from
the fit's parameter covariance and residual variance, the standard deviation of a future
observation (:meth:`CurveFit.std`). This module imports neither Spark nor TensorFlow.

Fits run in *normalized coordinates*: ``x = k - k_first`` over the window, and
``y = (L - L_last) / scale`` with ``scale`` the job's largest per-iteration drop. The fit is then the
same for a loss multiplied by 1000 or shifted by a constant, and the numbers ``curve_fit`` sees are
of order 1 whatever the job's units. In these coordinates:

* sublinear, ``y = 1 / (a x^2 + b x + c) + d`` with ``a, b >= 0``, ``c > 0`` and ``d <= 0``: the
  denominator is positive and increasing for every ``x >= 0``, so the curve never rises and never
  crosses a pole, however far ahead it is read;
* exponential, ``y = A exp(-r x) + c`` with ``A >= 0``, ``r > 0`` and ``c <= 0``: the thesis's
  ``mu^(k - b) + c`` with ``mu = exp(-r)`` and ``b = k_first + ln(scale A) / r``.

``d`` and ``c`` are bounded by 0 so the asymptote lies at or below the last observed loss. Initial
guesses come from a variable-projection grid (for each candidate rate or asymptote the remaining
parameters are a weighted linear least-squares problem), then ``curve_fit`` (trust region
reflective, bounded) refines them.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import OptimizeWarning, curve_fit

SUBLINEAR = "sublinear"
EXPONENTIAL = "exponential"

#: Weight of the score ``j`` epochs before the latest in :func:`predict`: recent epochs count more.
DECAY = 0.9
_R_GRID = np.logspace(-4, 1.5, 48)  # r = -ln(mu): mu from 0.9999 down to about 2e-14
_D_GRID = np.logspace(-1.5, 2.5, 24)  # asymptote below the last loss, in units of x_last * last drop


def sublinear(k, a, b, c, d):
    """The sublinear family ``1 / (a k^2 + b k + c) + d`` (O(1/k) optimizers: GD, SGD, Lloyd)."""
    return 1.0 / (a * np.square(k) + b * k + c) + d


def exponential(k, mu, b, c):
    """The linear/superlinear family ``mu^(k - b) + c`` (O(mu^k) optimizers: L-BFGS, Newton)."""
    return np.power(mu, np.asarray(k, dtype=float) - b) + c


def _sub_norm(x, a, b, c, d):
    return 1.0 / (a * x * x + b * x + c) + d


def _exp_norm(x, amp, r, c):
    return amp * np.exp(-r * x) + c


def _sub_jac(x, a, b, c, d):
    g = -1.0 / np.square(a * x * x + b * x + c)
    return np.column_stack([g * x * x, g * x, g, np.ones_like(x)])


def _exp_jac(x, amp, r, c):
    e = np.exp(-r * x)
    return np.column_stack([e, -amp * x * e, np.ones_like(x)])


@dataclass(frozen=True)
class CurveFit:
    """One fitted loss curve, read in the job's own loss units.

    Attributes
    ----------
    family : str
        ``"sublinear"`` or ``"exponential"``.
    params : tuple of float
        ``(a, b, c, d)`` or ``(mu, b, c)`` in the thesis's form, with ``k`` the iteration number
        and the loss in the job's units.
    floor : float
        The asymptote (``d`` or ``c``), the loss the job is predicted to converge to.
    residual : float
        Weighted mean squared residual in normalized units (largest drop = 1); the family with
        the smaller one wins.
    """

    family: str
    params: tuple
    floor: float
    residual: float
    _shift: float
    _scale: float
    _ref: float
    _norm_params: tuple
    _norm_cov: np.ndarray | None = field(default=None, compare=False, repr=False)

    def __call__(self, k):
        """Predicted loss at iteration(s) ``k`` (continuous ``k`` allowed)."""
        x = np.asarray(k, dtype=float) - self._shift
        f = _sub_norm if self.family == SUBLINEAR else _exp_norm
        return self._ref + self._scale * f(x, *self._norm_params)

    def std(self, k):
        """Standard deviation of an observation at iteration(s) ``k``, in the job's units.

        The delta method: the parameters' covariance carried through the curve's Jacobian at ``k``,
        plus the residual variance of one observation (``residual``, weight 1). ``inf`` where the
        fit cannot say: fewer than two points more than parameters, or an infinite covariance.
        """
        x = np.atleast_1d(np.asarray(k, dtype=float) - self._shift)
        if self._norm_cov is None:
            out = np.full(x.shape, np.inf)
        else:
            jac = (_sub_jac if self.family == SUBLINEAR else _exp_jac)(x, *self._norm_params)
            var = np.einsum("ni,ij,nj->n", jac, self._norm_cov, jac) + self.residual
            out = self._scale * np.sqrt(np.maximum(var, 0.0))
        return out if np.ndim(k) else float(out[0])


def fit_family(family: str, k: np.ndarray, losses: np.ndarray, weights: np.ndarray, scale: float) -> CurveFit | None:
    """Weighted least-squares fit of one family; ``None`` when the optimizer fails."""
    shift, ref = float(k[0]), float(losses[-1])
    x, y = k - shift, (losses - ref) / scale
    sigma = 1.0 / np.sqrt(weights)
    if family == SUBLINEAR:
        try:
            p0, f, jac = _sub_guess(x, y, weights), _sub_norm, _sub_jac
        except np.linalg.LinAlgError:  # too few distinct points for the quadratic
            return None
        bounds = ([0, 0, 1e-12, -np.inf], [np.inf, np.inf, np.inf, 0])
    else:
        p0, f, jac = _exp_guess(x, y, weights), _exp_norm, _exp_jac
        bounds = ([0, 1e-9, -np.inf], [np.inf, 50.0, 0])
    lows, highs = np.array(bounds[0], dtype=float), np.array(bounds[1], dtype=float)
    p0 = np.clip(p0, lows + 1e-12, highs - 1e-12)
    # Levenberg-Marquardt (MINPACK) is ~10x faster than the bounded trust-region method; keep its
    # answer when it lands inside the bounds, which it does on well-behaved histories.
    popt, pcov = _curve_fit(f, jac, x, y, p0, sigma, None)
    if popt is None or np.any(popt < lows - 1e-9) or np.any(popt > highs + 1e-9):
        popt, pcov = _curve_fit(f, jac, x, y, p0, sigma, bounds)
    if popt is None:
        return None
    popt = np.clip(popt, lows, highs)
    fitted = f(x, *popt)
    if not np.all(np.isfinite(fitted)):
        return None
    residual = float(np.sum(weights * (y - fitted) ** 2) / np.sum(weights))
    if pcov is not None and (len(x) < len(popt) + 2 or not np.all(np.isfinite(pcov))):  # dof >= 2
        pcov = None
    return CurveFit(family, _thesis_params(family, popt, shift, scale, ref), ref + scale * float(popt[-1]),
                    residual, shift, scale, ref, tuple(float(p) for p in popt), pcov)


def _curve_fit(f, jac, x, y, p0, sigma, bounds) -> tuple:
    """``curve_fit`` with LM (``bounds`` None) or bounded TRF: ``(params, covariance)``, ``(None, None)``
    when it fails."""
    kwargs = dict(method="lm", maxfev=200) if bounds is None else dict(method="trf", bounds=bounds, max_nfev=100)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", OptimizeWarning)
            popt, pcov = curve_fit(f, x, y, p0=p0, sigma=sigma, jac=jac, **kwargs)
    except (RuntimeError, ValueError, TypeError, FloatingPointError, np.linalg.LinAlgError):
        return None, None  # TypeError: LM needs at least as many points as parameters
    return (popt, pcov) if np.all(np.isfinite(popt)) else (None, None)


def _thesis_params(family, p, s, scale, ref) -> tuple:
    if family == SUBLINEAR:
        a, b, c, d = p
        return (a / scale, (b - 2 * a * s) / scale, (a * s * s - b * s + c) / scale, ref + scale * d)
    amp, r, c = p
    b = s + math.log(scale * amp) / r if amp > 0 else -math.inf
    return (math.exp(-r), b, ref + scale * c)


def _exp_guess(x, y, w) -> np.ndarray:
    """Best ``(A, r, c)`` on a grid of rates; for each rate ``A`` and ``c`` are linear."""
    basis = np.exp(-np.outer(_R_GRID, x))  # (R, n)
    sw = np.sqrt(w)
    # Solve the 2x2 weighted normal equations for every rate at once.
    s_ee = (w * basis * basis).sum(1)
    s_e = (w * basis).sum(1)
    s_1 = w.sum()
    s_ey = (w * basis * y).sum(1)
    s_y = (w * y).sum()
    det = s_ee * s_1 - s_e * s_e
    det = np.where(np.abs(det) < 1e-300, 1e-300, det)
    amp = (s_ey * s_1 - s_e * s_y) / det
    c = (s_ee * s_y - s_e * s_ey) / det
    amp, c = np.maximum(amp, 0.0), np.minimum(c, 0.0)
    err = ((sw * (amp[:, None] * basis + c[:, None] - y)) ** 2).sum(1)
    i = int(np.argmin(err))
    return np.array([amp[i], _R_GRID[i], c[i]])


def _sub_guess(x, y, w) -> np.ndarray:
    """Best ``(a, b, c, d)`` on a grid of asymptotes ``d``; ``1 / (y - d)`` is then a quadratic in ``x``."""
    last_drop = max((y[-2] - y[-1]) / max(x[-1] - x[-2], 1e-12), 1e-6)
    ds = -_D_GRID * last_drop * (x[-1] + 1.0)  # (D,), all < 0 <= y_last
    gap = y[None, :] - ds[:, None]  # (D, n)
    ds, gap = ds[np.all(gap > 0, axis=1)], gap[np.all(gap > 0, axis=1)]
    if not ds.size:
        return np.array([0.0, 1.0, 1.0 / max(y[0] + 1.0, 1e-6), -1.0])
    # An error e in y is an error of about e / gap^2 in 1 / gap: weigh the quadratic fit by gap^4.
    rw = w[None, :] * gap ** 4  # (D, n)
    design = np.stack([x * x, x, np.ones_like(x)], axis=-1)  # (n, 3)
    normal = np.einsum("dn,ni,nj->dij", rw, design, design) + 1e-12 * np.eye(3)
    rhs = np.einsum("dn,ni,dn->di", rw, design, 1.0 / gap)
    coef = np.linalg.solve(normal, rhs[..., None])[..., 0]  # (D, 3)
    coef = np.maximum(coef, [0.0, 0.0, 1e-9])
    pred = 1.0 / (design @ coef.T).T + ds[:, None]
    err = (w * (pred - y) ** 2).sum(1)
    i = int(np.argmin(err))
    return np.array([*coef[i], ds[i]])


def predict(curve, epochs_ahead: int, *, mode: str = "max") -> list:
    """Each curve family's mean and standard deviation of the score at the next ``epochs_ahead`` epochs.

    Both families are fitted to the scores (negated when higher is better), recent epochs weighted
    more. Returns ``[(mean, std), ...]``, one pair per family that could be fitted; a family's
    standard deviation is ``inf`` when the curve has too few epochs for its parameters.
    """
    scores = np.asarray(curve, dtype=float)
    n = len(scores)
    if n < 2 or epochs_ahead < 1 or not np.all(np.isfinite(scores)):
        return []
    sign = -1.0 if mode == "max" else 1.0
    losses = sign * scores
    k = np.arange(1, n + 1, dtype=float)
    weights = DECAY ** (n - k)
    scale = max(float(np.ptp(losses)), 1e-9)
    ahead = np.arange(n + 1, n + epochs_ahead + 1, dtype=float)
    fits = (fit_family(family, k, losses, weights, scale) for family in (SUBLINEAR, EXPONENTIAL))
    return [(sign * np.asarray(f(ahead), dtype=float), np.asarray(f.std(ahead), dtype=float)) for f in fits if f]
