"""Recommend: how many task slots a job should get, by the model that predicts its held-out runs well.

Every model the runs allow (USBA, IPSO, and the waves model when the runs carry their stages' task counts) is
fitted on all runs; with three or more runs each also predicts every run from the others (leave-one-out), and
IPSO recommends unless another model's median error is at most half its own (:func:`chosen_model`). Candidates
run from one slot to twice the most slots measured: further out the fits extrapolate past anything they saw.
When the runs differ in their task count at the same slots (the job ran with different partitionings), USBA or
the waves model, which have the task counts in them, also pick the partitioning: among the measured task counts
only, so the advice names a run whose setting to keep. A task count that varies only with the slots is Spark's
own doing (AQE coalescing towards the slots): each candidate is then predicted at the task count the runs show
for it (measured, else a line through them) with the stages of the run nearest in slots.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

import numpy as np

from spark_plugin.arguments import number, whole_number
from spark_plugin.errors import UsageError

from .intervals import Interval, interval, next_count
from .models import Ipso, Usba, Waves
from .runs import Run

TARGETS = ("fastest", "cheapest")
#: The rules of :func:`recommend`'s arguments, which the command line's options apply as they are parsed
#: (:mod:`spark_plugin.arguments`): one rule each. Every slot count up to ``max_slots`` is predicted, so it has a
#: bound (100 000 slots take about a second).
CORES_PER_EXECUTOR = dict(low=1, high=1024, fix="Pass the cores of one executor (spark.executor.cores), e.g. 4.")
MAX_SLOTS = dict(low=1, high=100_000, fix="Pass the cluster's task slots (its cores), or leave it out for twice "
                                          "the most measured.")
WITHIN = dict(low=0.0, fix="Pass how much slower than the fastest the cheapest may be (0: the fastest itself).")
MODELS = ("usba", "ipso", "waves")
#: Another model advises instead of IPSO only where its median held-out error is at most this share of IPSO's
#: (chosen on the recorded TPC-H and trainer runs, benchmarks/results/advisor/README.md).
SWITCH_FROM_IPSO = 0.5


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
    intervals: dict = field(default_factory=dict)  # slots -> Interval of the chosen model's prediction
    next_slots: int | None = None  # the unmeasured slot count worth running next to settle the advice

    @property
    def interval(self) -> Interval:
        """The advised count's predicted time with its interval (:mod:`.intervals`)."""
        return self.intervals[self.slots]

    @property
    def tasks_per_slot(self) -> float:
        """Partitions per executor core: the thesis's n_p / m_p."""
        return self.tasks / self.slots


def models_for(runs: list[Run]) -> tuple[str, ...]:
    """The models these runs can fit: the waves model needs every run's stage task counts."""
    return MODELS if all(r.stage_tasks for r in runs) else MODELS[:2]


def predictor(name: str, runs: list[Run]):
    """A function ``(slots, like=None)``: the run time model ``name`` (``usba``, ``ipso``, ``waves``) fitted on
    ``runs`` predicts on ``slots`` slots for a run shaped like ``like`` (its task count, its stages' task counts);
    without it, the runs' median task count and the stages of the run nearest in slots. IPSO has no shape in it.
    ``advisor`` is the model :func:`chosen_model` picks from these runs (so a held-out run's prediction is the
    advisor's own, its choice made without that run)."""
    if name == "advisor":
        return predictor(chosen_model(runs), runs)
    if name == "usba":
        model, tasks = Usba.fit(runs), round(statistics.median(r.tasks for r in runs))
        return lambda slots, like=None: model.predict(slots, tasks if like is None else like.tasks)
    if name == "waves":
        model = Waves.fit(runs)
        return lambda slots, like=None: model.predict(slots, (like or _nearest(runs, slots)).stage_tasks)
    model = Ipso.fit(runs)
    return lambda slots, like=None: model.predict(slots)


def holdout_errors(runs: list[Run], name: str) -> list[float]:
    """|predicted - measured| / measured of each run, predicted by ``name`` fitted on the other runs."""
    return _relative_errors(_holdout_predictions(runs, name))


def holdout_log_errors(runs: list[Run], name: str) -> list[float]:
    """ln(measured / predicted) of each run, predicted by ``name`` fitted on the other runs (the intervals'
    input: a log error treats a time twice the prediction and half of it alike)."""
    return _log_errors(_holdout_predictions(runs, name))


def _relative_errors(held) -> list[float]:
    return [abs(predicted - run.wall_s) / run.wall_s for run, predicted in held]


def _log_errors(held) -> list[float]:
    return [math.log(run.wall_s / max(predicted, 1e-9)) for run, predicted in held]


def _holdout_predictions(runs: list[Run], name: str):
    for i, run in enumerate(runs):
        yield run, predictor(name, runs[:i] + runs[i + 1:])(run.slots, run)


def recommend(runs: list[Run], *, target: str = "fastest", within: float = 0.10,
              cores_per_executor: int = 1, max_slots: int | None = None) -> Advice:
    """The slots (and partitioning) for ``target``: ``fastest``, or ``cheapest`` (fewest slot-seconds) within
    ``within`` of it, among 1 to ``max_slots`` slots (default: twice the most measured; pass the cluster's size,
    or the most measured to advise only what was run).

    Raises
    ------
    UsageError
        For an unknown target, a ``within`` below 0, a ``cores_per_executor`` or ``max_slots`` not a whole number
        in its range (:data:`CORES_PER_EXECUTOR`, :data:`MAX_SLOTS`).
    ValueError
        For fewer than two distinct slot counts among the runs.
    """
    if target not in TARGETS:
        raise UsageError(f"target {target!r}: give one of {', '.join(TARGETS)}")
    within = number(within, what="within", **WITHIN)
    cores_per_executor = whole_number(cores_per_executor, what="cores_per_executor", **CORES_PER_EXECUTOR)
    if max_slots is not None:
        max_slots = whole_number(max_slots, what="max_slots", **MAX_SLOTS)
    if len({r.slots for r in runs}) < 2:
        raise ValueError("the advisor needs runs at two or more slot counts (executors x cores); got "
                         f"{sorted({r.slots for r in runs})}")
    held = _held_out(runs)
    errors = _medians(held)
    partitionings = _has_partitionings(runs)
    top = max_slots or 2 * max(r.slots for r in runs)
    if partitionings:
        candidates = [(m, n) for m in range(1, top + 1) for n in sorted({r.tasks for r in runs})]
    else:
        candidates = list(_tasks_by_slots(runs, top).items())
    chosen = chosen_model(runs, errors)
    shapes = {(m, n): _shape(runs, m, n) for m, n in candidates}
    fitted = {name: predictor(name, runs) for name in errors}
    grid = {(m, n): fitted[chosen](m, shape) for (m, n), shape in shapes.items()}
    fastest = min(grid, key=grid.get)
    best = fastest
    if target == "cheapest":
        best = min((key for key in grid if grid[key] <= (1 + within) * grid[fastest]), key=lambda k: k[0] * grid[k])
    slots, tasks = best
    kind, why = Ipso.fit(runs).scaling_type()
    source = next(r.source for r in runs if r.tasks == tasks) if partitionings else ""
    curve = {name: {m: f(m, shape) for (m, n), shape in shapes.items() if not partitionings or n == tasks}
             for name, f in fitted.items()}
    measured = sorted({r.slots for r in runs})
    log_errors = _log_errors(held[chosen]) if held[chosen] is not None else []
    intervals = {m: interval(t, log_errors, m, measured) for m, t in curve[chosen].items()}
    return Advice(slots=slots, executors=math.ceil(slots / cores_per_executor), predicted_s=grid[best],
                  target=target, model=chosen, scaling_type=kind, why=why, tasks=tasks, partitioning_from=source,
                  holdout_error=errors, curve=curve, intervals=intervals,
                  next_slots=next_count(intervals, slots, measured))


def chosen_model(runs: list[Run], errors: dict | None = None) -> str:
    """The model the advice uses, by median leave-one-out error (``errors``, computed when not given).

    IPSO unless another model predicts the held-out runs in at most :data:`SWITCH_FROM_IPSO` of its error: a
    median over three or four held-out runs is noisy, and IPSO, a smooth curve with every part non-negative,
    goes least wrong when the errors' order is chance. Across partitionings IPSO, which has no task count in
    it, cannot advise: the smallest error of the others. With fewer than three runs nothing can be held out:
    IPSO, or USBA across partitionings."""
    errors = _holdout_medians(runs) if errors is None else errors
    if _has_partitionings(runs):
        return "usba" if errors["usba"] is None else min((n for n in errors if n != "ipso"), key=errors.get)
    if errors["ipso"] is None:
        return "ipso"
    best = min(errors, key=errors.get)
    return best if errors[best] <= SWITCH_FROM_IPSO * errors["ipso"] else "ipso"


def _holdout_medians(runs: list[Run]) -> dict:
    """Model name -> median leave-one-out error (``None`` with fewer than three runs)."""
    return _medians(_held_out(runs))


def _held_out(runs: list[Run]) -> dict:
    """Model name -> each run with its leave-one-out prediction (``None`` with fewer than three runs): the one
    pass that both the models' errors and the chosen model's intervals are read from."""
    return {name: list(_holdout_predictions(runs, name)) if len(runs) >= 3 else None for name in models_for(runs)}


def _medians(held: dict) -> dict:
    return {name: None if pairs is None else statistics.median(_relative_errors(pairs)) for name, pairs in held.items()}


def _has_partitionings(runs: list[Run]) -> bool:
    """Whether one slot count ran at two or more task counts (the job was run with different partitionings)."""
    return any(len({r.tasks for r in runs if r.slots == m}) > 1 for m in {r.slots for r in runs})


def _nearest(runs: list[Run], slots: int, tasks: int | None = None) -> Run:
    """The run nearest ``slots`` (the larger on a tie), among those of ``tasks`` tasks when given."""
    pool = [r for r in runs if tasks is None or r.tasks == tasks] or runs
    return min(pool, key=lambda r: (abs(r.slots - slots), -r.slots))


def _shape(runs: list[Run], slots: int, tasks: int) -> Run:
    """A candidate run on ``slots`` slots with ``tasks`` tasks, its stages those of the nearest run of that many."""
    return Run(slots=slots, tasks=tasks, wall_s=0.0, stage_tasks=_nearest(runs, slots, tasks).stage_tasks)


def _tasks_by_slots(runs: list[Run], top: int) -> dict[int, int]:
    """Slots 1..top -> the task count the runs show there: the median measured, else a line fitted through them."""
    measured = {m: round(statistics.median(r.tasks for r in runs if r.slots == m)) for m in {r.slots for r in runs}}
    slope, intercept = np.polyfit(list(measured), list(measured.values()), 1)
    return {m: measured.get(m, max(1, round(intercept + slope * m))) for m in range(1, top + 1)}
