"""Recommend: how many task slots a job should get, by the model that predicts its held-out runs best.

Both models are fitted on all runs; with three or more runs each also predicts every run from the others
(leave-one-out), and the one with the smaller median error recommends. Candidates run from one slot to twice
the most slots measured: further out the fits extrapolate past anything they saw.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from .models import Ipso, Usba
from .runs import Run

TARGETS = ("fastest", "cheapest")


@dataclass(frozen=True)
class Advice:
    """The recommendation and what it rests on."""

    slots: int
    executors: int
    predicted_s: float
    target: str
    model: str
    scaling_type: str
    why: str
    holdout_error: dict = field(default_factory=dict)  # model name -> median relative error (None: too few runs)
    curve: dict = field(default_factory=dict)  # model name -> {slots: predicted seconds}


def predictor(name: str, runs: list[Run]):
    """A function of slots fitted on ``runs`` by model ``name`` (``usba`` or ``ipso``), at the runs' task count."""
    tasks = round(statistics.median(r.tasks for r in runs))
    if name == "usba":
        model = Usba.fit(runs)
        return lambda slots: model.predict(slots, tasks)
    model = Ipso.fit(runs)
    return model.predict


def holdout_errors(runs: list[Run], name: str) -> list[float]:
    """|predicted - measured| / measured of each run, predicted by ``name`` fitted on the other runs."""
    errors = []
    for i, run in enumerate(runs):
        rest = runs[:i] + runs[i + 1:]
        errors.append(abs(predictor(name, rest)(run.slots) - run.wall_s) / run.wall_s)
    return errors


def recommend(runs: list[Run], *, target: str = "fastest", within: float = 0.10,
              cores_per_executor: int = 1) -> Advice:
    """The slots for ``target``: ``fastest``, or ``cheapest`` (fewest slot-seconds) within ``within`` of it.

    Raises
    ------
    ValueError
        For an unknown target, or fewer than two distinct slot counts among the runs.
    """
    if target not in TARGETS:
        raise ValueError(f"target {target!r}: give one of {', '.join(TARGETS)}")
    if len({r.slots for r in runs}) < 2:
        raise ValueError("the advisor needs runs at two or more slot counts (executors x cores); got "
                         f"{sorted({r.slots for r in runs})}")
    errors = {name: statistics.median(holdout_errors(runs, name)) if len(runs) >= 3 else None
              for name in ("usba", "ipso")}
    chosen = min(errors, key=lambda n: errors[n]) if errors["usba"] is not None else "ipso"
    top = 2 * max(r.slots for r in runs)
    curves = {name: {m: predictor(name, runs)(m) for m in range(1, top + 1)} for name in errors}
    curve = curves[chosen]
    fastest = min(curve, key=curve.get)
    slots = fastest
    if target == "cheapest":
        slots = min((m for m in curve if curve[m] <= (1 + within) * curve[fastest]), key=lambda m: m * curve[m])
    kind, why = Ipso.fit(runs).scaling_type()
    return Advice(slots=slots, executors=math.ceil(slots / cores_per_executor), predicted_s=curve[slots],
                  target=target, model=chosen, scaling_type=kind, why=why, holdout_error=errors, curve=curves)
