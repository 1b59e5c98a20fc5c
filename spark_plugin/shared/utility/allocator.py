"""Hand out units (cores, slots) to jobs by their utility: VideoStorm's greedy max-sum and max-min.

Every job comes as a :class:`Claim`: its utility for each count of units, the most units it can use and
the memory its first unit needs. :func:`allocate` returns ``{job_id: units}`` for every job, summing to at
most ``capacity``:

* **First round**: every job whose memory fits gets one unit, so none starves; when units (or memory) are
  short, the jobs whose first unit is worth most (max-sum) or whose utility without it is lowest
  (max-min) go first, skipping any whose memory no longer fits.
* ``objective="sum"``: each further unit goes to the job whose utility gains most from it (VideoStorm's
  max-sum; on concave utilities this maximizes the total, the tests compare it with brute force).
* ``objective="min"``: each further unit goes to the job of lowest utility among those one more unit
  still helps (max-min); only when none is helped do the others get the rest.
* Ties go to the job with fewer units, then to the one listed first. Every unit is handed out while any
  served job is below its ``max_units`` (work conservation), even at zero gain.

Cost: O((J + C) log J) heap operations, each utility evaluated lazily in doubling blocks of unit counts
(one vectorized call per job and block).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Callable, Hashable, Sequence

import numpy as np

OBJECTIVES = ("sum", "min")


@dataclass(frozen=True)
class Claim:
    """One job as the allocator sees it.

    Parameters
    ----------
    job_id : hashable
        Unique among the claims of one call.
    utility : callable or sequence of float
        The job's utility with ``n`` units: ``utility(n)`` maps an int array of unit counts to a float
        array of the same shape, or ``utility[n]`` is a table (beyond its end the value stays at its last
        entry).
    max_units : int, default=None
        The most units the job can use; ``None`` for no limit.
    memory : float, default=0.0
        Memory the job needs to run at all (taken with its first unit).
    """

    job_id: Hashable
    utility: Callable | Sequence[float]
    max_units: int | None = None
    memory: float = 0.0


def allocate(claims: Sequence[Claim], capacity: int, *, objective: str = "sum", memory: float = math.inf) -> dict:
    """Units per job under ``objective`` (see the module docstring).

    Raises
    ------
    ValueError
        For a negative or non-integer ``capacity``, an unknown ``objective``, duplicate job ids, a negative
        ``max_units`` or ``memory``, or a utility that is empty or not finite.

    Examples
    --------
    >>> allocate([Claim("etl", [0, 5, 9, 12]), Claim("report", [0, 4, 5, 5])], 4)
    {'etl': 3, 'report': 1}
    >>> allocate([Claim("etl", [0, 5, 9, 12]), Claim("report", [0, 4, 5, 5])], 4, objective="min")
    {'etl': 2, 'report': 2}
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {list(OBJECTIVES)}. Got {objective!r}.")
    claims = list(claims)
    _check(claims, capacity)
    if not claims:
        return {}
    maxmin = objective == "min"
    limits = [capacity if c.max_units is None else min(c.max_units, capacity) for c in claims]
    block = 2 * (capacity // len(claims)) + 2
    tables = [_Table(c, lim, block) for c, lim in zip(claims, limits)]
    units = [0] * len(claims)

    def key(i: int) -> tuple:
        a = units[i]
        now, more = tables[i].at(a), tables[i].at(a + 1)
        if maxmin:  # lowest first, but only where one more unit still helps
            return (0 if more > now else 1, now, a, i)
        return (-(more - now), a, i)

    free, left = capacity, memory
    eligible = [i for i in range(len(claims)) if limits[i] > 0]
    if capacity < len(eligible) or sum(claims[i].memory for i in eligible) > memory:
        eligible.sort(key=key)  # who goes first matters only when not every job gets its first unit
    for i in eligible:
        if free == 0:
            break
        if claims[i].memory > left:
            continue
        units[i], free, left = 1, free - 1, left - claims[i].memory
    heap = [key(i) for i in range(len(claims)) if 0 < units[i] < limits[i]]
    heapq.heapify(heap)
    while free > 0 and heap:
        i = heap[0][-1]
        units[i] += 1
        free -= 1
        if units[i] < limits[i]:
            heapq.heapreplace(heap, key(i))
        else:
            heapq.heappop(heap)
    return {c.job_id: a for c, a in zip(claims, units)}


def by_priority(first: Sequence[Hashable], extra: Sequence[Hashable] | None = None) -> dict:
    """Utilities under which max-sum serves ``first`` in its order and, with ``extra``, gives one more unit
    each in that order: how a policy that is an order of jobs allocates through :func:`allocate`.

    Returns ``{job_id: utility table}``: with ``m = len(extra)``, the k-th job of ``first`` gains
    ``(len(first) - k) * (m + 1)`` from its first unit and the k-th job of ``extra`` a further ``m - k``
    (less than any first unit) from its second; no gain past that, so pass ``max_units`` 1 or 2.

    >>> by_priority(["b", "a"], ["a", "b"])
    {'b': [0, 6, 7], 'a': [0, 3, 5]}
    """
    m = len(extra or ())
    tables = {job: [0, (len(first) - k) * (m + 1)] for k, job in enumerate(first)}
    for k, job in enumerate(extra or ()):
        if job in tables:
            tables[job].append(tables[job][1] + m - k)
    return tables


class _Table:
    """One claim's utility by unit count, extended in doubling blocks when it is a callable."""

    __slots__ = ("fn", "values", "limit", "job_id")

    def __init__(self, claim: Claim, limit: int, first_block: int):
        self.job_id, self.limit = claim.job_id, limit
        if callable(claim.utility):
            self.fn, self.values = claim.utility, np.zeros(0)
            self.extend(min(limit, first_block))
        else:
            table = np.asarray(claim.utility, dtype=float).ravel()
            if table.size == 0:
                raise ValueError(f"the utility of job {claim.job_id!r} is an empty table. "
                                 "Give at least the values for 0 and 1 units.")
            _check_finite(claim.job_id, table)
            self.fn, self.values = None, table

    def extend(self, upto: int) -> None:
        n = np.arange(self.values.size, upto + 1)
        new = np.asarray(self.fn(n), dtype=float).reshape(n.shape)
        _check_finite(self.job_id, new)
        self.values = np.concatenate([self.values, new])

    def at(self, n: int) -> float:
        if n >= self.values.size:
            if self.fn is None:
                return float(self.values[-1])
            self.extend(min(self.limit, max(n, 2 * self.values.size)))
        return float(self.values[min(n, self.values.size - 1)])


def _check(claims: Sequence[Claim], capacity: int) -> None:
    if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) or capacity < 0:
        raise ValueError(f"capacity must be an int >= 0 (units to split). Got {capacity!r}.")
    seen = set()
    for c in claims:
        if c.job_id in seen:
            raise ValueError(f"job ids must be unique. Got {c.job_id!r} twice. Merge or rename the jobs.")
        seen.add(c.job_id)
        if c.max_units is not None and (isinstance(c.max_units, bool) or not isinstance(c.max_units, (int, np.integer))
                                        or c.max_units < 0):
            raise ValueError(f"max_units of job {c.job_id!r} must be an int >= 0 or None. Got {c.max_units!r}.")
        if not (isinstance(c.memory, (int, float, np.number)) and c.memory >= 0):
            raise ValueError(f"memory of job {c.job_id!r} must be a number >= 0. Got {c.memory!r}.")


def _check_finite(job_id, values: np.ndarray) -> None:
    if not np.all(np.isfinite(values)):
        raise ValueError(f"the utility of job {job_id!r} has non-finite values {values[~np.isfinite(values)][:3]}. "
                         "Utilities must be finite numbers; check the job's predictions.")
