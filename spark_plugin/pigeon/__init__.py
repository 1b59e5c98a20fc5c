"""Pigeon's reserved short-job share, in one shared Spark driver (seed 002, ch. 4; spec ``others.md`` §5).

Pigeon keeps two weighted fair queues per group of workers, short jobs before long ones at a
weight of about 20, and reserves a few percent of the workers for short tasks, so a short job
never queues behind a wide long one. Its cluster-level half (groups, masters) replaced Spark's
scheduler; what carries over to one driver is the policy, in Spark's FAIR scheduler:

* **pools** (:class:`ShortJobPools`): ``pigeon-short`` (weight ``spark.pigeon.short.weight``, 20;
  ``minShare`` ``spark.pigeon.short.minShare`` of the cores, 5%, at least one) and ``pigeon-long``
  (weight 1), both FAIR inside, created at run time, or written as an allocation file
  (:meth:`ShortJobPools.allocation_file`) for ``spark.scheduler.allocation.file``;
* **routing** (:meth:`ShortJobPools.pool_for`): a job whose shape's past runs predict at most
  ``spark.pigeon.short.maxLength`` (10 s) alone on the cluster goes to the short pool, every other
  job to the long one; a shape never seen counts as short, once, and is measured.

``minShare`` is no reservation: Spark's pools are work-conserving and never preempt, so the short
pool gets the next free slots, not slots kept idle. Yaq's gate (:mod:`spark_plugin.yaq`) routes the
jobs it releases through these pools when both are on.
"""

from __future__ import annotations

import math

from ..arguments import by_key, seconds_by_key, whole_number
from ..job_history import Work

SHORT, LONG = "pigeon-short", "pigeon-long"


class ShortJobPools:
    """The two pools of one application and the rule that routes a job to one of them.

    Parameters
    ----------
    cores : int
        Task slots of the application (``minShare`` is a fraction of them), at most :data:`MAX_CORES`.
    max_length_s : float, default=10.0
        A job predicted to take at most this long alone on every core is short.
    weight : int, default=20
        The short pool's weight (the long pool's is 1): at most one long task in ``weight + 1`` when
        both pools want slots and both are past their ``minShare``.
    min_share : float, default=0.05
        Fraction of ``cores`` the short pool gets first, at least one slot.

    ``max_length_s``, ``weight`` and ``min_share`` are checked by the rules of ``spark.pigeon.short.maxLength``,
    ``.weight`` and ``.minShare``.
    """

    #: Most task slots an application is sized for (Spark's largest clusters run some 10^5 cores).
    MAX_CORES = 10_000_000

    def __init__(self, cores: int, *, max_length_s: float = 10.0, weight: int = 20, min_share: float = 0.05):
        self.cores = whole_number(cores, what="ShortJobPools' cores", low=1, high=self.MAX_CORES,
                                  fix="Pass the application's task slots (sc.defaultParallelism).")
        self.max_length_s = seconds_by_key("spark.pigeon.short.maxLength", max_length_s,
                                           what="ShortJobPools' max_length_s")
        self.weight = by_key("spark.pigeon.short.weight", weight, what="ShortJobPools' weight")
        min_share = by_key("spark.pigeon.short.minShare", min_share, what="ShortJobPools' min_share")
        self.short_min_share = max(1, math.ceil(min_share * self.cores))

    @classmethod
    def from_conf(cls, sc) -> "ShortJobPools":
        """The pools ``sc``'s ``spark.pigeon.*`` keys describe, for its ``defaultParallelism`` slots."""
        from ..keys import KEYS

        values = KEYS.validate(dict(sc.getConf().getAll()), files=False)
        return cls(sc.defaultParallelism, max_length_s=values["spark.pigeon.short.maxLength"] / 1000.0,
                   weight=values["spark.pigeon.short.weight"], min_share=values["spark.pigeon.short.minShare"])

    def pool_for(self, work: Work | None) -> str:
        """The pool of a job whose shape's past runs estimate ``work`` (``None``: never seen)."""
        return SHORT if work is None or work.length_s(self.cores) <= self.max_length_s else LONG

    def install(self, sc) -> "ShortJobPools":
        """Add both pools to ``sc``'s FAIR root pool, unless present (an allocation file may define them)."""
        from ..pools import add_pool, fair_scheduling

        if not fair_scheduling(sc):
            raise ValueError("Pigeon's pools need spark.scheduler.mode=FAIR: set it when the session starts.")
        add_pool(sc, SHORT, self.short_min_share, self.weight)
        add_pool(sc, LONG, 0, 1)
        return self

    def allocation_file(self) -> str:
        """The same two pools as a ``fairscheduler.xml`` (for ``spark.scheduler.allocation.file``)."""
        pools = ((SHORT, self.weight, self.short_min_share), (LONG, 1, 0))
        body = "\n".join(f'  <pool name="{name}">\n    <schedulingMode>FAIR</schedulingMode>\n'
                         f"    <weight>{weight}</weight>\n    <minShare>{share}</minShare>\n  </pool>"
                         for name, weight, share in pools)
        return f'<?xml version="1.0"?>\n<allocations>\n{body}\n</allocations>\n'
