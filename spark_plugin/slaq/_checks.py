"""Declarative parameter checks shared by the SLAQ policy classes (house rule 5)."""

from __future__ import annotations

import math
from numbers import Integral, Real


def check_params(obj, constraints: dict) -> None:
    """Raise ``ValueError`` for the first attribute of ``obj`` outside its constraint.

    ``constraints`` maps an attribute name to ``(kind, low, high, closed)``: ``kind`` is ``int``
    or ``float``, ``low``/``high`` are bounds (``None``: unbounded) and ``closed`` is
    ``"both"``, ``"left"``, ``"right"`` or ``"neither"``; or to a ``frozenset`` of allowed values.
    """
    for name, rule in constraints.items():
        value = getattr(obj, name)
        if isinstance(rule, frozenset):
            if value not in rule:
                raise ValueError(f"The '{name}' parameter of {type(obj).__name__} must be one of "
                                 f"{sorted(rule)}. Got {value!r} instead.")
            continue
        kind, low, high, closed = rule
        if not in_interval(value, kind, low, high, closed):
            raise ValueError(f"The '{name}' parameter of {type(obj).__name__} must be "
                             f"{describe(kind, low, high, closed)}. Got {value!r} instead.")


def in_interval(value, kind, low, high, closed="both") -> bool:
    """Whether ``value`` is a ``kind`` number inside the interval."""
    if isinstance(value, bool) or not isinstance(value, Integral if kind is int else Real):
        return False
    if not math.isfinite(value):
        return False
    if low is not None and (value < low or (value == low and closed in ("right", "neither"))):
        return False
    if high is not None and (value > high or (value == high and closed in ("left", "neither"))):
        return False
    return True


def describe(kind, low, high, closed="both") -> str:
    left = "[" if closed in ("both", "left") else "("
    right = "]" if closed in ("both", "right") else ")"
    lo = "-inf" if low is None else low
    hi = "inf" if high is None else high
    return f"{'an int' if kind is int else 'a finite number'} in {left}{lo}, {hi}{right}"
