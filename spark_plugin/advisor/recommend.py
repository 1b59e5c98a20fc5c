"""Recommend: how many task slots a job should get, by the model that predicts its held-out runs best.

Both models are fitted on all runs; with three or more runs each also predicts every run from the others
(leave-one-out), and the one with the smaller median error recommends. Candidates run from one slot to twice
the most slots measured: further out the fits extrapolate past anything they saw. When the runs differ in their
task count at the same slots (the job ran with different partitionings), USBA, the one model with the task count
N in it, also picks the partitioning: among the measured task counts only, so the advice names a run whose setting
to keep. A task count that varies only with the slots is Spark's own doing (AQE coalescing towards the slots):
each candidate is then predicted at the task count the runs show for it (measured, else a line through them).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

import numpy as np

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
    tasks: int  # the task count (partitioning) advised: the runs' own when they share one
    partitioning_from: str = ""  # a run with that task count (its file), when the runs' partitionings differ
    holdout_error: dict = field(default_factory=dict)  # model name -> median relative error (None: too few runs)
    curve: dict = field(default_factory=dict)  # model name -> {slots: predicted seconds} (at their task counts)

    @property
    def tasks_per_slot(self) -> float:
        """Partitions per executor core: the thesis's n_p / m_p."""
        return self.tasks / self.slots


def predictor(name: str, runs: list[Run]):
    """A function ``(slots, tasks=None)`` fitted on ``runs`` by model ``name`` (``usba`` or ``ipso``); ``tasks``
    defaults to the runs' median task count, and IPSO, which has no task count in it, ignores it."""
    default = round(statistics.median(r.tasks for r in runs))
    if name == "usba":
        model = Usba.fit(runs)
        return lambda slots, tasks=None: model.predict(slots, default if tasks is None else tasks)
    model = Ipso.fit(runs)
    return lambda slots, tasks=None: model.predict(slots)


def holdout_errors(runs: list[Run], name: str) -> list[float]:
    """|predicted - measured| / measured of each run, predicted by ``name`` fitted on the other runs."""
    errors = []
    for i, run in enumerate(runs):
        rest = runs[:i] + runs[i + 1:]
        errors.append(abs(predictor(name, rest)(run.slots, run.tasks) - run.wall_s) / run.wall_s)
    return errors


def recommend(runs: list[Run], *, target: str = "fastest", within: float = 0.10,
              cores_per_executor: int = 1) -> Advice:
    """The slots (and partitioning) for ``target``: ``fastest``, or ``cheapest`` (fewest slot-seconds) within
    ``within`` of it.

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
    partitionings = any(len({r.tasks for r in runs if r.slots == m}) > 1 for m in {r.slots for r in runs})
    top = 2 * max(r.slots for r in runs)
    if partitionings:
        chosen = "usba"
        candidates = [(m, n) for m in range(1, top + 1) for n in sorted({r.tasks for r in runs})]
    else:
        chosen = min(errors, key=lambda n: errors[n]) if errors["usba"] is not None else "ipso"
        candidates = [(m, n) for m, n in _tasks_by_slots(runs, top).items()]
    fitted = {name: predictor(name, runs) for name in errors}
    grid = {(m, n): fitted[chosen](m, n) for m, n in candidates}
    fastest = min(grid, key=grid.get)
    best = fastest
    if target == "cheapest":
        best = min((key for key in grid if grid[key] <= (1 + within) * grid[fastest]), key=lambda k: k[0] * grid[k])
    slots, tasks = best
    kind, why = Ipso.fit(runs).scaling_type()
    source = next(r.source for r in runs if r.tasks == tasks) if partitionings else ""
    return Advice(slots=slots, executors=math.ceil(slots / cores_per_executor), predicted_s=grid[best],
                  target=target, model=chosen, scaling_type=kind, why=why, tasks=tasks, partitioning_from=source,
                  holdout_error=errors,
                  curve={name: {m: f(m, n) for m, n in candidates if not partitionings or n == tasks}
                         for name, f in fitted.items()})


def _tasks_by_slots(runs: list[Run], top: int) -> dict[int, int]:
    """Slots 1..top -> the task count the runs show there: the median measured, else a line fitted through them."""
    measured = {m: round(statistics.median(r.tasks for r in runs if r.slots == m)) for m in {r.slots for r in runs}}
    slope, intercept = np.polyfit(list(measured), list(measured.values()), 1)
    return {m: measured.get(m, max(1, round(intercept + slope * m))) for m in range(1, top + 1)}
