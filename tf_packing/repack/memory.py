"""Memory estimator: peak bytes of a member trained alone, and of a pack (spec 5.2).

The thesis found that a packed pair uses the sum of its members' memory and
that a CNN's peak grows in proportion to its batch size (L451-L460). The
estimate per member is

    bytes = value_bytes * (params * (2 + slots) + 2 * activations * batch_size)

with weights, gradients and optimizer slots per parameter, and every layer's
output kept for the backward pass plus its gradient. A pack's estimate is the
sum over its members. :func:`footprint` reads the two counts from a built Keras
model (importing Keras only when called); the arithmetic imports no TensorFlow.
"""

from __future__ import annotations

import math

__all__ = ["OPTIMIZER_SLOTS", "estimate_bytes", "footprint", "model_bytes", "pack_bytes"]

#: Slot variables per parameter kept by common optimizers.
OPTIMIZER_SLOTS = {"sgd": 0, "momentum": 1, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2, "nadam": 2,
                   "adamax": 2}


def estimate_bytes(n_params: int, activations: int, batch_size: int, *, slots: int = 2,
                   value_bytes: int = 4) -> int:
    """Estimated peak bytes of one member: parameters, gradients, slots and activations.

    Examples
    --------
    >>> estimate_bytes(1_000, 100, 32, slots=2)
    41600
    """
    if batch_size < 1 or n_params < 0 or activations < 0:
        raise ValueError(f"estimate_bytes needs n_params >= 0, activations >= 0 and batch_size >= 1. "
                         f"Got {n_params}, {activations}, {batch_size}.")
    return value_bytes * (n_params * (2 + slots) + 2 * activations * batch_size)


def pack_bytes(members) -> int:
    """Estimated peak bytes of a pack: the sum of its members' estimates."""
    return sum(members)


def footprint(model) -> tuple:
    """``(n_params, activations_per_example, slots)`` of a built, compiled Keras model."""
    n_params = int(sum(math.prod(w.shape) for w in model.weights))
    activations = 0
    for layer in model.layers:
        try:
            shape = layer.output.shape
        except (AttributeError, ValueError):
            continue
        activations += int(math.prod(d for d in shape[1:] if d is not None))
    optimizer = getattr(model, "optimizer", None)
    name = type(optimizer).__name__.lower() if optimizer is not None else "sgd"
    slots = OPTIMIZER_SLOTS.get(name, 2)
    if name == "sgd" and getattr(optimizer, "momentum", 0):
        slots = 1
    return n_params, activations, slots


def model_bytes(model, batch_size: int) -> int:
    """:func:`estimate_bytes` of a built Keras model at ``batch_size``."""
    n_params, activations, slots = footprint(model)
    return estimate_bytes(n_params, activations, batch_size, slots=slots)
