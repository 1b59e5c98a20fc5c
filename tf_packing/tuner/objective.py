"""What the tuner ranks trials by: a Keras log name and a direction, as Keras Tuner's ``Objective``.

A name alone picks its direction the way Keras Tuner does for the common
metrics (losses and errors down, accuracies and AUCs up); any other name needs
its direction given (``Objective("val_f1", "max")``). An object with ``name``
and ``direction`` attributes, such as ``keras_tuner.Objective``, is accepted as
it is. This module imports no TensorFlow.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Objective", "objective_of"]

_DOWN = ("loss", "error", "mse", "mae", "mape", "msle", "crossentropy", "hinge", "divergence")
_UP = ("accuracy", "acc", "auc", "precision", "recall", "f1", "iou")


@dataclass(frozen=True)
class Objective:
    """A log key (``"val_accuracy"``) and whether higher (``"max"``) or lower (``"min"``) is better."""

    name: str
    direction: str

    def __post_init__(self):
        if self.direction not in ("max", "min"):
            raise ValueError(f"objective {self.name!r}: direction must be 'max' or 'min'. Got {self.direction!r}.")

    @property
    def mode(self) -> str:
        return self.direction

    def better(self, a: float, b: float) -> bool:
        """Whether score ``a`` beats score ``b``."""
        return a > b if self.direction == "max" else a < b

    @property
    def worst(self) -> float:
        """The score that loses to every other (what a diverged trial is ranked by)."""
        return float("-inf") if self.direction == "max" else float("inf")


def objective_of(objective) -> Objective:
    """An :class:`Objective` from a name, an ``Objective`` or any object with ``name`` and ``direction``."""
    if isinstance(objective, Objective):
        return objective
    if hasattr(objective, "name") and hasattr(objective, "direction"):
        return Objective(str(objective.name), str(objective.direction))
    if not isinstance(objective, str) or not objective:
        raise TypeError(f"objective must be a log name such as 'val_accuracy' or an Objective(name, direction). "
                        f"Got {objective!r}.")
    metric = objective.removeprefix("val_").lower()
    if metric.endswith(_DOWN):
        return Objective(objective, "min")
    if metric.endswith(_UP):
        return Objective(objective, "max")
    raise ValueError(f"cannot tell whether objective {objective!r} should go up or down. Pass "
                     f"tf_packing.Objective({objective!r}, 'max') or 'min' (keras_tuner.Objective works too).")
