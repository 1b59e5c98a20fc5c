"""HyperDrive-style kill-threshold pruning inside a Hyperband rung (specs/others.md, section 2.5).

HyperDrive's first "poor" rule terminates a trial whose metric has not passed a
kill threshold (for example chance accuracy plus a margin) once it has trained
for an evaluation boundary of 5-10% of the maximum epochs [S1:2075-2085]. Inside
pack-aware Hyperband a killed trial is freed from its pack at once, so the rest
of the pack trains without it, and it is never promoted. This module imports no
TensorFlow.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KillRule", "check_boundary_and_mode"]


def check_boundary_and_mode(boundary, mode, owner: str = "") -> None:
    """The settings every early-kill rule shares: an evaluation boundary of at least one epoch, a direction."""
    if boundary < 1:
        raise ValueError(f"{owner}boundary must be >= 1 epoch. Got {boundary!r}; HyperDrive suggests 5-10% of the "
                         "maximum epochs.")
    if mode not in ("max", "min"):
        raise ValueError(f"{owner}mode must be 'max' or 'min'. Got {mode!r}.")


@dataclass(frozen=True)
class KillRule:
    """Kill a trial whose best score is still below ``threshold`` after ``boundary`` epochs.

    Parameters
    ----------
    threshold : float
        Score a trial must have reached (e.g. ``1/num_classes + 0.05`` accuracy).
    boundary : int, default=1
        Epochs a trial trains before the rule applies.
    mode : {"max", "min"}, default="max"
        Whether higher scores are better (accuracy) or lower ones (loss).

    Examples
    --------
    >>> rule = KillRule(threshold=0.15, boundary=2)
    >>> rule.should_kill([0.10]), rule.should_kill([0.10, 0.12]), rule.should_kill([0.10, 0.30])
    (False, True, False)
    """

    threshold: float
    boundary: int = 1
    mode: str = "max"

    def __post_init__(self):
        check_boundary_and_mode(self.boundary, self.mode)

    def should_kill(self, curve, *, epochs_left=None, best=None) -> bool:
        """Whether a trial with per-epoch scores ``curve`` should stop now.

        ``epochs_left`` and ``best`` (what :class:`~tf_packing.tuner.hyperdrive.HyperDrive` weighs) are
        accepted and ignored: a fixed threshold needs neither.
        """
        curve = list(curve)
        if len(curve) < self.boundary:
            return False
        best = max(curve) if self.mode == "max" else min(curve)
        return best < self.threshold if self.mode == "max" else best > self.threshold
