"""Which Keras jobs train next epoch on the device: Rotary-DLT's threshold rule (Algorithm 5) and baselines.

A policy orders the active jobs (:class:`DltView`); :func:`choose` then takes them in that order while
the device's memory holds them: one job per epoch, or with packing as many as fit (at most ``max_pack``),
which then train as one pack. The order becomes utilities (:func:`spark_plugin.shared.utility.by_priority`) and
the shared allocator makes the choice, the same allocator SLAQ's and Rotary-AQP's arbiters use.

* ``rotary-dlt`` (Algorithm 5): while any job's progress is below the threshold ``T``, lowest progress
  first, so that no job falls far behind; once every job has reached ``T``, highest progress first, so
  that the jobs closest to their goals finish. ``T = 0`` is all efficiency, ``T = 1`` all fairness. Jobs
  predicted not to meet their criterion within budget (the thesis's "considered converged",
  :func:`.progress.reachable`) are not waited for and come last.
* ``rotary-dlt-deadline``: our variant, as ``rotary-deadline`` is for Rotary-AQP: the jobs predicted to
  meet their criterion within budget first, earliest deadline first (jobs without one after them, by
  progress), then those predicted to miss. Serving a job that cannot attain only delays others.
* ``fifo``: arrival order. ``edf``: earliest deadline first (none: last). ``srtf``: shortest predicted
  remaining training time first (epochs still needed times epoch time; unknown: first, to learn it).
  ``fair``: fewest epochs trained so far first (round robin).
* The thesis's own baselines (3.4.2), each one family of criteria first, the other jobs round robin:
  ``srf`` (shortest runtime criterion first), ``bcf`` (biggest convergence delta first), ``laf`` (lowest
  accuracy target first).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from spark_plugin.arguments import number, whole_number
from spark_plugin.shared.criteria import Criterion
from spark_plugin.shared.utility import Claim, allocate, by_priority

from ..repack import MAX_PACK


def threshold_of(value, *, what: str) -> float:
    """Rotary-DLT's T as ``what`` gives it, once it is a progress in [0, 1] (the arbiter's and the benchmark's
    one check)."""
    return number(value, what=what, low=0, high=1, fix="Pass e.g. 0.5 (0 is all efficiency, 1 all fairness).")


def max_pack_of(value, *, what: str) -> int:
    """The most jobs of a round's pack as ``what`` gives it, once it is a whole number in [1, :data:`MAX_PACK`]."""
    return whole_number(value, what=what, low=1, high=MAX_PACK, fix="Pass e.g. 4 (1 trains one job at a time).")


@dataclass(frozen=True)
class DltView:
    job_id: str
    arrival_s: float
    deadline_s: float | None  # absolute, on the arbiter's clock
    progress: float  # phi in [0, 1]
    epochs: int  # epochs trained
    memory: float  # estimated bytes on the device
    remaining_s: float | None = None  # predicted training time still needed (None: unknown)
    reachable: bool = True  # predicted to meet its criterion within budget
    criterion: Criterion | None = None  # what the thesis's baselines order by


def order(policy: str, views: list[DltView], threshold: float = 0.5) -> list[DltView]:
    """The jobs in the order ``policy`` serves them."""
    by_arrival = sorted(views, key=lambda v: (v.arrival_s, v.job_id))
    if policy == "rotary-dlt":
        live = [v for v in by_arrival if v.reachable]
        late = sorted((v for v in by_arrival if not v.reachable), key=lambda v: -v.progress)
        if all(v.progress >= threshold for v in live):
            return sorted(live, key=lambda v: -v.progress) + late
        return sorted(live, key=lambda v: v.progress) + late
    if policy == "rotary-dlt-deadline":
        return sorted(by_arrival, key=lambda v: (not v.reachable, math.inf if v.deadline_s is None else v.deadline_s,
                                                 -v.progress))
    if policy == "fifo":
        return by_arrival
    if policy == "edf":
        return sorted(by_arrival, key=lambda v: math.inf if v.deadline_s is None else v.deadline_s)
    if policy == "srtf":
        return sorted(by_arrival, key=lambda v: -1.0 if v.remaining_s is None else v.remaining_s)
    if policy == "fair":
        return sorted(by_arrival, key=lambda v: v.epochs)
    if policy in _FAMILY_FIRST:
        family, key = _FAMILY_FIRST[policy]
        first = sorted((v for v in by_arrival if _kind(v) == family), key=lambda v: key(v.criterion))
        return first + sorted((v for v in by_arrival if _kind(v) != family), key=lambda v: v.epochs)
    raise ValueError(f"unknown Rotary-DLT policy {policy!r}; choose from {', '.join(POLICIES)}")


def _runtime_epochs(c: Criterion) -> float:
    return math.inf if c.budget.epochs is None else c.budget.epochs


# The thesis's baselines: (the family of criteria served first, its order), the rest round robin.
_FAMILY_FIRST = {"srf": ("runtime", _runtime_epochs), "bcf": ("convergence", lambda c: -c.delta),
                 "laf": ("accuracy", lambda c: c.threshold)}


def _kind(view: DltView) -> str | None:
    return None if view.criterion is None else view.criterion.kind


POLICIES = ("rotary-dlt", "rotary-dlt-deadline", "fifo", "edf", "srtf", "fair", "srf", "bcf", "laf")


def choose(ordered: list[DltView], memory: float, *, max_pack: int = 1) -> list[str]:
    """The jobs that train next epoch: in order while ``memory`` holds them, at most ``max_pack``."""
    tables = by_priority([v.job_id for v in ordered])
    claims = [Claim(v.job_id, tables[v.job_id], max_units=1, memory=v.memory) for v in ordered]
    grant = allocate(claims, max_pack, memory=memory)
    return [v.job_id for v in ordered if grant[v.job_id]]
