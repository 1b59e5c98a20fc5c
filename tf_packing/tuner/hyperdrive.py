"""HyperDrive's POP policy for the tuner: predict each trial's curve, kill the poor, order the promising first.

HyperDrive (seed 001; ``specs/others.md`` section 2) classifies every running
configuration from its learning curve:

* **poor**: after an evaluation boundary of ``b`` epochs, its score has not
  passed a kill threshold, or the confidence ``p`` that it reaches the target
  within the epochs it may still train is below ``delta`` (0.05): terminated;
* **promising**: ``p`` above the threshold where the slots promising trials
  want, ``N_satisfying(p) * k``, meet the slots they deserve, ``S * p``
  (:func:`promising_slots`, section 2.2 step 4);
* **opportunistic**: the rest, which explore.

The confidence follows Eq. 7.1-7.3: ``P(y(m) >= target)`` for each epoch ``m``
still to come, a PMF from its differences, ``p`` their sum and the expected
remaining time ``ERT = sum m p_m`` epochs. HyperDrive fits Domhan's 11 curve
families by MCMC, which takes minutes per curve; this module fits the two
families SLAQ's loss predictor uses (:mod:`spark_plugin.shared.curves`, the shared
curve module) to the negated score by weighted least squares, and reads
``P(y(m) >= target)`` from a normal distribution with the fit's delta-method
standard deviation (the spec's "residual-variance estimate"): a few
milliseconds per curve. Without a fixed target the target is the best score
any trial has reached so far (spec 2.5, "or the best-so-far").

Inside pack-aware Hyperband (:class:`tf_packing.Tuner`), a killed trial leaves
its pack at once and is never promoted, and each rung trains the packs that
hold promising trials first. This module imports no TensorFlow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from spark_plugin.shared.curves import predict

from .early_kill import KillRule, check_boundary_and_mode

__all__ = ["HyperDrive", "Outlook", "promising_slots"]

@dataclass(frozen=True)
class Outlook:
    """What a trial's curve predicts for the epochs it may still train.

    Attributes
    ----------
    mean, std : numpy.ndarray
        Predicted score and its standard deviation at each epoch to come.
    cdf : numpy.ndarray
        ``P(y(m) >= target)`` at each epoch ``m`` to come, made non-decreasing.
    confidence : float
        ``p``: the probability of reaching the target within those epochs (Eq. 7.1).
    ert : float
        Expected remaining epochs to the target, ``sum m p_m`` (Eq. 7.2).
    """

    mean: np.ndarray
    std: np.ndarray
    cdf: np.ndarray
    confidence: float
    ert: float


def outlook(curve, target: float, epochs_left: int, *, mode: str = "max", noise: float = 0.0) -> Outlook | None:
    """Confidence and expected remaining epochs of reaching ``target`` within ``epochs_left`` epochs.

    Where the two families disagree, the more hopeful one speaks (its confidence is the larger):
    their disagreement is model uncertainty, and a kill needs both to agree. None until both
    families know their spread (six epochs), so a slow starter is not judged on the fast-saturating
    family alone. ``noise`` is a floor under the predicted standard deviation: a fit through a
    handful of points can be spuriously exact, and a score measured on a finite validation set is not.
    """
    predicted = predict(curve, epochs_left, mode=mode)
    if len(predicted) < 2 or not all(np.all(np.isfinite(std)) for _, std in predicted):
        return None  # too few epochs to know the spread: nothing to judge yet
    return max((_judge(mean, np.maximum(std, noise), target, mode) for mean, std in predicted),
               key=lambda o: o.confidence)


def _judge(mean, std, target, mode) -> Outlook:
    """Eq. 7.1-7.2 for one predicted curve: CDF of reaching ``target`` by each epoch, confidence, ERT."""
    z = (mean - target) / std if mode == "max" else (target - mean) / std
    cdf = np.maximum.accumulate(0.5 * (1.0 + np.vectorize(math.erf)(z / math.sqrt(2.0))))
    pmf = np.diff(cdf, prepend=0.0)
    ert = float(np.sum(np.arange(1, len(pmf) + 1) * pmf))
    return Outlook(mean, std, cdf, float(cdf[-1]), ert)


def promising_slots(confidences, erts, slots: int, epochs_left: int, per_trial: int = 1) -> tuple:
    """HyperDrive's split (section 2.2 step 4): ``S_promising = max_p min(N_satisfying(p) k, S p)``.

    ``N_satisfying(p)`` counts the trials whose confidence is at least ``p`` and whose expected
    remaining time fits the budget. Returns ``(S_promising, p_thresh)``; ``(0, 1.0)`` when no
    trial can use a slot.

    Examples
    --------
    >>> promising_slots([0.9, 0.8, 0.2, 0.01], [3, 4, 9, 20], slots=4, epochs_left=10)
    (2, 0.8)
    """
    best, threshold = 0, 1.0
    for p in sorted(set(confidences), reverse=True):
        satisfying = sum(1 for c, e in zip(confidences, erts) if c >= p and e <= epochs_left)
        effective = min(satisfying * per_trial, math.floor(slots * p))
        if effective > best:
            best, threshold = effective, p
    return best, threshold


@dataclass(frozen=True)
class HyperDrive:
    """POP early termination for :class:`tf_packing.Tuner` (pass it as ``early_stopping``).

    Parameters
    ----------
    target : float, optional
        The score a trial must reach (``y_target``). Default: the best score any trial has
        reached so far, so a trial is killed when it is unlikely to beat the current best.
    boundary : int, default=3
        Epochs a trial trains before it can be killed (HyperDrive: 5-10% of the maximum epochs).
    delta : float, default=0.05
        A trial whose confidence of reaching the target is below this is poor.
    kill_threshold : float, optional
        A trial whose best score has not passed this after ``boundary`` epochs is poor
        (e.g. chance accuracy plus a margin).
    noise : float, default=0.01
        Least standard deviation of a predicted score, in the score's units: the measurement
        noise of a validation score (1 point of accuracy; HyperDrive saw up to 2% run to run).
    mode : {"max", "min"}, default="max"
        Whether higher scores are better; the tuner checks it against its objective.

    Examples
    --------
    >>> rule = HyperDrive(target=0.9, boundary=3)
    >>> rule.should_kill([0.10, 0.12, 0.11, 0.12, 0.115, 0.12], epochs_left=20)
    True
    >>> rule.should_kill([0.30, 0.55, 0.70, 0.78, 0.83, 0.86], epochs_left=20)
    False
    """

    target: float | None = None
    boundary: int = 3
    delta: float = 0.05
    kill_threshold: float | None = None
    noise: float = 0.01
    mode: str = "max"

    def __post_init__(self):
        check_boundary_and_mode(self.boundary, self.mode, owner="HyperDrive ")
        if not 0 < self.delta < 1:
            raise ValueError(f"HyperDrive delta must be in (0, 1). Got {self.delta!r}; the thesis uses 0.05.")

    def target_for(self, best: float | None) -> float | None:
        """The target a trial is judged against: the fixed one, else the best score so far."""
        return self.target if self.target is not None else best

    def outlook(self, curve, *, epochs_left: int, best: float | None = None) -> Outlook | None:
        """The trial's outlook against :meth:`target_for`, or None when there is nothing to judge."""
        target = self.target_for(best)
        if target is None or epochs_left < 1:
            return None
        return outlook(curve, target, epochs_left, mode=self.mode, noise=self.noise)

    def should_kill(self, curve, *, epochs_left: int, best: float | None = None) -> bool:
        """Whether a trial with per-epoch scores ``curve`` is poor now."""
        curve = list(curve)
        if curve and not math.isfinite(curve[-1]):
            return True  # diverged: its score is NaN or infinite
        if len(curve) < self.boundary:
            return False
        threshold = self.kill_threshold
        if threshold is not None and KillRule(threshold, self.boundary, self.mode).should_kill(curve):
            return True
        seen = self.outlook(curve, epochs_left=epochs_left, best=best)
        return seen is not None and seen.confidence < self.delta

    def classify(self, curves: dict, *, epochs_left: dict, slots: int, best: float | None = None) -> dict:
        """``{trial: "promising" | "opportunistic" | "poor"}`` for the trials whose curves are given.

        ``slots`` is S, the trials that can train at once (a pack's members); ``epochs_left`` gives
        each trial's remaining budget in epochs.
        """
        labels, seen = {}, {}
        for trial, curve in curves.items():
            if self.should_kill(curve, epochs_left=epochs_left[trial], best=best):
                labels[trial] = "poor"
            elif (o := self.outlook(curve, epochs_left=epochs_left[trial], best=best)) is not None:
                seen[trial] = o
            else:
                labels[trial] = "opportunistic"
        if seen:
            budget = max(epochs_left[t] for t in seen)
            _, p_thresh = promising_slots([o.confidence for o in seen.values()], [o.ert for o in seen.values()],
                                          slots, budget)
            for trial, o in seen.items():
                promising = o.confidence >= p_thresh and o.ert <= epochs_left[trial]
                labels[trial] = "promising" if promising else "opportunistic"
        return labels
