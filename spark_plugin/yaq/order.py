"""Which waiting job the gate releases next: Yaq's starvation-aware comparator (Algorithm 3), per job.

Among the jobs that wait, a *starved* one goes first, the earliest arrival among them; otherwise
the policy orders them, and arrival breaks ties:

* ``"srjf"``: shortest remaining job first, by estimated task-seconds (Yaq's best for job
  completion time);
* ``"lrtf"``: least remaining tasks first, needing only task counts;
* ``"fifo"``: by arrival, the order Spark's FIFO scheduler would start them in.

A job is starved once it has waited longer than ``min(hard_s, ratio * its estimated length)``:
the hard threshold bounds every wait, the relative one lets a short job jump the line only for a
while. A job of a shape never seen has no estimate; it counts as the shortest (it runs early and
is measured), and only the hard threshold applies to it.
"""

from __future__ import annotations

from dataclasses import dataclass

POLICIES = ("srjf", "lrtf", "fifo")


@dataclass(frozen=True)
class Waiting:
    """A job at the gate: its name, when it arrived (s), estimated length alone on the cluster (s) and tasks."""

    name: str
    arrival_s: float
    length_s: float | None = None
    tasks: float | None = None


def starved(job: Waiting, now_s: float, hard_s: float, ratio: float) -> bool:
    """Whether ``job`` has waited past its threshold, ``min(hard_s, ratio * length_s)``."""
    limit = hard_s if job.length_s is None else min(hard_s, ratio * job.length_s)
    return now_s - job.arrival_s > limit


def release_order(waiting, now_s: float, *, policy: str = "srjf", hard_s: float = 60.0,
                  ratio: float = 4.0) -> list[Waiting]:
    """``waiting`` in the order the gate releases them now.

    >>> jobs = [Waiting("long", 0.0, 20.0, 200), Waiting("short", 1.0, 0.5, 4)]
    >>> [j.name for j in release_order(jobs, 2.0)]
    ['short', 'long']
    >>> [j.name for j in release_order(jobs, 2.0, hard_s=1.5)]      # 'long' waited 2 s > 1.5 s: starved
    ['long', 'short']
    """
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {list(POLICIES)}. Got {policy!r}.")

    def key(job: Waiting):
        if starved(job, now_s, hard_s, ratio):
            return (0, job.arrival_s, 0.0)
        if policy == "srjf":
            rank = job.length_s or 0.0
        elif policy == "lrtf":
            rank = job.tasks or 0.0
        else:
            rank = job.arrival_s
        return (1, rank, job.arrival_s)

    return sorted(waiting, key=key)
