"""Keras-Tuner-compatible hyper-parameters: ``hp.Choice``, ``hp.Int``, ``hp.Float``, ``hp.Boolean``, ``hp.Fixed``.

A Keras Tuner user's ``build_fn(hp)`` runs unchanged: each call registers the
hyper-parameter the first time it is seen and returns the trial's value (the
default while the space is being discovered). The space is discovered the way
Keras Tuner does it, by calling ``build_fn`` once with empty values; a name first
met later (in a branch the first call did not take) joins the space then, with
its default for the trial that met it.

What the oracle needs beyond Keras Tuner's API:

* :meth:`HyperParameters.sample`: one random configuration. When every
  parameter draws uniformly from a finite list (choices, booleans, linear
  integer or stepped ranges), the space is a cross product and the oracle
  samples it without replacement by flat index (:meth:`HyperParameters.size`,
  :meth:`HyperParameters.config_at`).
* :meth:`HyperParameters.index`: a value's position for the packing distance
  (thesis "index distance", L552): its index in an ordered list, or for a
  continuous range its position on a grid of :data:`GRID` steps.

A dict of lists (``{"lr": [1e-3, 1e-2]}``) is still accepted everywhere a space
is: :meth:`HyperParameters.from_dict` makes each list a ``Choice``. This module
imports no TensorFlow.
"""

from __future__ import annotations

import contextlib
import math
import numbers
from dataclasses import dataclass, field

__all__ = ["GRID", "HyperParameters"]

#: Grid steps a continuous range counts as, for the packing distance (the thesis's lists hold 4-11 values).
GRID = 10
_SAMPLINGS = ("linear", "log", "reverse_log")


def _is_number(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


@dataclass(frozen=True)
class _Condition:
    parent: str
    values: tuple

    def holds(self, values: dict) -> bool:
        return values.get(self.parent) in self.values


@dataclass(frozen=True)
class _Param:
    """One hyper-parameter: its kind and range, and the conditions under which it is active."""

    name: str
    kind: str  # "choice", "int", "float", "boolean", "fixed"
    values: tuple = ()
    min_value: float | None = None
    max_value: float | None = None
    step: float | None = None
    sampling: str = "linear"
    ordered: bool = False
    default: object = None
    conditions: tuple = field(default=(), compare=False)

    # -- values -------------------------------------------------------------------------
    def finite_values(self) -> tuple | None:
        """Every value, in order, when the parameter has finitely many; else None."""
        if self.kind in ("choice", "fixed", "boolean"):
            return self.values
        if self.kind == "int" or self.step is not None:
            step = self.step or 1
            count = int(math.floor((self.max_value - self.min_value) / step + 1e-9)) + 1
            cast = int if self.kind == "int" else float
            return tuple(cast(self.min_value + i * step) for i in range(count))
        return None

    @property
    def uniform(self) -> bool:
        """Whether a random value is uniform over :meth:`finite_values` (flat-index sampling is then exact)."""
        return self.finite_values() is not None and (self.kind in ("choice", "fixed", "boolean")
                                                     or self.sampling == "linear")

    def sample(self, rng):
        finite = self.finite_values()
        if self.uniform:
            return finite[rng.randrange(len(finite))]
        value = self._from_unit(rng.random())
        if finite is not None:  # a stepped range sampled in log space: the nearest grid value
            value = min(finite, key=lambda v: abs(v - value))
        return value

    def contains(self, value) -> bool:
        finite = self.finite_values()
        if finite is not None:
            return value in finite
        return _is_number(value) and self.min_value <= value <= self.max_value

    # -- geometry -----------------------------------------------------------------------
    def index(self, value) -> float:
        """Position for the packing distance: list index, or ``GRID`` x the unit position of a range."""
        finite = self.finite_values()
        if finite is not None and (self.kind != "float" or len(finite) <= GRID + 1):
            return float(finite.index(value)) if value in finite else self._to_unit(value) * (len(finite) - 1)
        return self._to_unit(value) * GRID

    @property
    def numeric(self) -> bool:
        """Whether distances between values are gaps of :meth:`index` (else 0/1 for equal/different)."""
        if self.kind in ("int", "float"):
            return True
        return self.kind == "choice" and (self.ordered or all(_is_number(v) for v in self.values))

    def _to_unit(self, value) -> float:
        lo, hi = self.min_value, self.max_value
        if hi == lo:
            return 0.0
        if self.sampling == "log":
            return (math.log(value) - math.log(lo)) / (math.log(hi) - math.log(lo))
        if self.sampling == "reverse_log":
            return 1.0 - (math.log(hi + lo - value) - math.log(lo)) / (math.log(hi) - math.log(lo))
        return (value - lo) / (hi - lo)

    def _from_unit(self, u: float):
        lo, hi = self.min_value, self.max_value
        if self.sampling == "log":
            value = math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo)))
        elif self.sampling == "reverse_log":
            value = hi + lo - math.exp(math.log(lo) + (1.0 - u) * (math.log(hi) - math.log(lo)))
        else:
            value = lo + u * (hi - lo)
        value = min(max(value, lo), hi)
        return int(round(value)) if self.kind == "int" else float(value)


class HyperParameters:
    """A search space and one configuration's values, with Keras Tuner's ``hp`` API.

    Examples
    --------
    >>> hp = HyperParameters()
    >>> hp.Int("units", 32, 256, step=32), hp.Float("lr", 1e-4, 1e-1, sampling="log")
    (32, 0.0001)
    >>> hp.Choice("activation", ["relu", "tanh"]), hp.size()
    ('relu', None)
    >>> hp.values
    {'units': 32, 'lr': 0.0001, 'activation': 'relu'}
    """

    def __init__(self):
        self._space: dict[str, _Param] = {}
        self.values: dict = {}
        self._conditions: list[_Condition] = []

    # -- Keras Tuner's API ----------------------------------------------------------------
    def Choice(self, name, values, ordered=None, default=None, parent_name=None, parent_values=None):
        """One of ``values``; ``ordered`` (default: all numeric) makes the packing distance an index gap."""
        values = tuple(values)
        if not values:
            raise ValueError(f"hp.Choice({name!r}) needs at least one value.")
        if len({type(v) for v in values}) > 1 and not all(_is_number(v) for v in values):
            raise TypeError(f"hp.Choice({name!r}) values must all be of one type (numbers, strings or booleans). "
                            f"Got {values!r}.")
        if default is not None and default not in values:
            raise ValueError(f"hp.Choice({name!r}) default {default!r} is not one of {values!r}.")
        if ordered is None:
            ordered = all(_is_number(v) for v in values)
        default = values[0] if default is None else default
        return self._register(_Param(name, "choice", values, ordered=bool(ordered), default=default),
                              parent_name, parent_values)

    def Int(self, name, min_value, max_value, step=None, sampling="linear", default=None, parent_name=None,
            parent_values=None):
        """An integer in ``[min_value, max_value]``, every ``step`` (default 1), sampled linearly or in log space."""
        for key, v in (("min_value", min_value), ("max_value", max_value)):
            if not isinstance(v, numbers.Integral) or isinstance(v, bool):
                raise TypeError(f"hp.Int({name!r}) {key} must be an integer. Got {v!r}; use hp.Float for reals.")
        if step is not None and (not isinstance(step, numbers.Integral) or step < 1):
            raise ValueError(f"hp.Int({name!r}) step must be an integer >= 1. Got {step!r}.")
        return self._range(name, "int", int(min_value), int(max_value), step, sampling, default, parent_name,
                           parent_values)

    def Float(self, name, min_value, max_value, step=None, sampling="linear", default=None, parent_name=None,
              parent_values=None):
        """A real in ``[min_value, max_value]`` (on a grid of ``step`` if given), sampled linearly or in log space."""
        if step is not None and not step > 0:
            raise ValueError(f"hp.Float({name!r}) step must be > 0. Got {step!r}.")
        return self._range(name, "float", float(min_value), float(max_value), step, sampling, default,
                           parent_name, parent_values)

    def Boolean(self, name, default=False, parent_name=None, parent_values=None):
        """True or False."""
        return self._register(_Param(name, "boolean", (False, True), default=bool(default)), parent_name,
                              parent_values)

    def Fixed(self, name, value, parent_name=None, parent_values=None):
        """A constant that still appears in every trial's values."""
        return self._register(_Param(name, "fixed", (value,), default=value), parent_name, parent_values)

    @contextlib.contextmanager
    def conditional_scope(self, parent_name, parent_values):
        """Hyper-parameters registered inside are active only while ``parent_name`` is in ``parent_values``."""
        if parent_name not in self._space:
            raise ValueError(f"conditional_scope: {parent_name!r} is not a hyper-parameter yet. Register it first.")
        values = tuple(parent_values) if isinstance(parent_values, (list, tuple)) else (parent_values,)
        self._conditions.append(_Condition(parent_name, values))
        try:
            yield
        finally:
            self._conditions.pop()

    def get(self, name):
        """The value of ``name`` in this configuration."""
        if name in self.values:
            return self.values[name]
        if name in self._space:
            return None  # registered but inactive under its conditions
        raise KeyError(f"hyper-parameter {name!r} is not defined; known: {sorted(self._space)}.")

    def __getitem__(self, name):
        return self.get(name)

    def __contains__(self, name) -> bool:
        return name in self._space

    @property
    def space(self) -> list:
        """The registered hyper-parameters, in registration order."""
        return list(self._space.values())

    # -- what the oracle and the packer need ----------------------------------------------
    @classmethod
    def from_dict(cls, space: dict) -> "HyperParameters":
        """A space of one ``Choice`` per key of a dict of lists (numeric lists count as ordered)."""
        hp = cls()
        for name, values in space.items():
            hp.Choice(name, list(values))
        hp.values = {}
        return hp

    @classmethod
    def of(cls, space) -> "HyperParameters":
        """``space`` itself when it is a HyperParameters, else :meth:`from_dict`."""
        if isinstance(space, HyperParameters):
            return space
        if isinstance(space, dict):
            if not space or any(not isinstance(v, (list, tuple)) or not v for v in space.values()):
                raise ValueError(f"search_space must map each hyper-parameter to a non-empty list of values. "
                                 f"Got {space!r}.")
            return cls.from_dict(space)
        raise TypeError(f"search space must be a tf_packing.HyperParameters or a dict of lists. Got {type(space)}.")

    def copy(self, values: dict | None = None) -> "HyperParameters":
        """The same space with ``values`` (default: none, so every call returns its default)."""
        hp = HyperParameters()
        hp._space = dict(self._space)
        hp.values = dict(values or {})
        return hp

    def merge(self, other: "HyperParameters") -> list:
        """Add the parameters of ``other`` this space lacks; returns their names."""
        added = [name for name in other._space if name not in self._space]
        for name in added:
            self._space[name] = other._space[name]
        return added

    def size(self) -> int | None:
        """Configurations in the cross product, when every parameter is uniform over a finite list; else None."""
        if any(not p.uniform or p.conditions for p in self._space.values()):
            return None
        return math.prod(len(p.finite_values()) for p in self._space.values())

    def config_at(self, flat: int) -> dict:
        """The configuration at position ``flat`` of the cross product (last parameter varies fastest)."""
        config = {}
        for p in reversed(self._space.values()):
            values = p.finite_values()
            flat, digit = divmod(flat, len(values))
            config[p.name] = values[digit]
        return {name: config[name] for name in self._space}

    def sample(self, rng) -> dict:
        """One random configuration: each active parameter drawn by its sampling."""
        config = {}
        for p in self._space.values():
            if all(c.holds(config) for c in p.conditions):
                config[p.name] = p.sample(rng)
        return config

    def index(self, name, value) -> float:
        """Position of ``value`` of ``name`` for the packing distance."""
        return self._space[name].index(value)

    def is_numeric(self, name) -> bool:
        return self._space[name].numeric

    def describe(self) -> dict:
        """The space as declared, as plain data: for each name its kind, range or values, and conditions.

        What a search depends on, and nothing else (no defaults, no current values): a project folder
        records it so that a folder written over another space is refused.
        """
        described = {}
        for p in self._space.values():
            entry = {"kind": p.kind}
            if p.kind in ("int", "float"):
                entry.update(min_value=p.min_value, max_value=p.max_value, step=p.step, sampling=p.sampling)
            elif p.kind != "boolean":
                entry["values"] = list(p.values)
            if p.conditions:
                entry["conditions"] = [[c.parent, list(c.values)] for c in p.conditions]
            described[p.name] = entry
        return described

    # -- helpers --------------------------------------------------------------------------
    def _range(self, name, kind, lo, hi, step, sampling, default, parent_name, parent_values):
        if sampling not in _SAMPLINGS:
            raise ValueError(f"hp.{kind.title()}({name!r}) sampling must be one of {_SAMPLINGS}. Got {sampling!r}.")
        if not lo <= hi:
            raise ValueError(f"hp.{kind.title()}({name!r}) needs min_value <= max_value. Got {lo!r} > {hi!r}.")
        if sampling != "linear" and lo <= 0:
            raise ValueError(f"hp.{kind.title()}({name!r}) with sampling={sampling!r} needs min_value > 0. "
                             f"Got {lo!r}.")
        default = lo if default is None else default
        param = _Param(name, kind, min_value=lo, max_value=hi, step=step, sampling=sampling, ordered=True,
                       default=default)
        if not param.contains(default):
            raise ValueError(f"hp.{kind.title()}({name!r}) default {default!r} is outside its range.")
        return self._register(param, parent_name, parent_values)

    def _register(self, param: _Param, parent_name, parent_values):
        conditions = list(self._conditions)
        if parent_name is not None:
            values = tuple(parent_values) if isinstance(parent_values, (list, tuple)) else (parent_values,)
            conditions.append(_Condition(parent_name, values))
        param = _Param(**{**param.__dict__, "conditions": tuple(conditions)})
        known = self._space.get(param.name)
        if known is None:
            self._space[param.name] = param
        elif known != param:
            raise ValueError(f"hyper-parameter {param.name!r} is registered twice with different ranges "
                             f"({known.kind} vs {param.kind}); give the second one another name.")
        if not all(c.holds(self.values) for c in param.conditions):
            return None
        if param.name not in self.values:
            self.values[param.name] = param.default
        return self.values[param.name]
