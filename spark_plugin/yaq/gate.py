"""Yaq's job gate for a driver that runs many Spark jobs at once (notebook, Thrift or arbiter threads).

Spark's FIFO scheduler starts the tasks of whichever job came first, so one long job holds every
short job that arrives behind it; FAIR without pools shares by pool, not by length. The gate sits in
front of the scheduler: each job enters through :meth:`JobGate.job` (or :meth:`JobGate.sql`), waits
while ``maxInFlight`` jobs run, and is released in Yaq's order (:mod:`.order`: starved first, then
least estimated work). Its estimate is the shape's past work (:class:`~spark_plugin.job_history.JobHistory`),
measured from telemetry when each job ends: the task-seconds of the Spark jobs it ran, found by the
job group the gate gives it. With Pigeon's pools (``router=``) each released job also runs in the
short or long pool its estimate calls for.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow.compute as pc

from .. import local_properties
from ..arguments import by_key, seconds_by_key
from ..job_history import JobHistory, Work, sql_shape
from .order import Waiting, release_order

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Admission:
    """What the gate did with one job: its shape, estimate, pool, seconds waited and work measured."""

    name: str
    shape: str
    estimate: Work | None
    pool: str | None
    waited_s: float
    task_s: float | None = None
    tasks: int | None = None


class JobGate:
    """Releases a shared driver's jobs in Yaq's order, at most ``max_in_flight`` at a time.

    Parameters
    ----------
    spark : SparkSession
        The driver's session; its telemetry (on by default) measures each job's work.
    policy, max_in_flight, hard_s, ratio : optional
        Default from ``spark.yaq.policy``, ``spark.yaq.maxInFlight``, ``spark.yaq.starvation.threshold``
        and ``spark.yaq.starvation.ratio``; a value given is checked by that key's rule (``hard_s`` in
        seconds), never replaced by the default.
    history : JobHistory or str, optional
        Past work by shape, or a path to keep it in; default ``spark.yaq.history.path`` or a new one. A
        path is checked here, before any job: a folder, or a file that is not a history, is refused
        (:class:`~spark_plugin.errors.NotOursError`); a missing folder is created.
    router : ShortJobPools, optional
        Pigeon's pools: each released job runs in the pool its estimate calls for.
    clock : callable, default=time.monotonic
        Seconds, for arrivals and waits (tests pass one they move).

    Examples
    --------
    >>> gate = JobGate(spark)                                   # doctest: +SKIP
    >>> with gate.job("daily-report"):                          # doctest: +SKIP
    ...     spark.table("sales").groupBy("region").sum().collect()
    >>> rows = gate.sql("SELECT count(*) FROM lineitem WHERE l_quantity < 24")   # doctest: +SKIP
    """

    def __init__(self, spark, *, policy: str | None = None, max_in_flight: int | None = None,
                 hard_s: float | None = None, ratio: float | None = None, history=None, router=None,
                 clock: Callable[[], float] = time.monotonic):
        from ..keys import KEYS
        from ..telemetry_reader import telemetry

        conf = KEYS.validate(dict(spark.sparkContext.getConf().getAll()), files=False)
        self.spark, self.sc = spark, spark.sparkContext

        def setting(key, value, name):
            return conf[key] if value is None else by_key(key, value, what=f"JobGate's {name}")

        self.policy = setting("spark.yaq.policy", policy, "policy")
        self.max_in_flight = setting("spark.yaq.maxInFlight", max_in_flight, "max_in_flight")
        threshold = "spark.yaq.starvation.threshold"
        self.hard_s = (conf[threshold] / 1000.0 if hard_s is None
                       else seconds_by_key(threshold, hard_s, what="JobGate's hard_s"))
        self.ratio = setting("spark.yaq.starvation.ratio", ratio, "ratio")
        # A JobHistory given is kept at spark.yaq.history.path when that is set: checked here all the same.
        given_path = history is not None and not isinstance(history, JobHistory)
        self._history_path = history if given_path else conf["spark.yaq.history.path"]
        kept = (JobHistory.open(self._history_path, what="JobGate's history" if given_path
                                else "spark.yaq.history.path") if self._history_path else JobHistory())
        self.history = history if isinstance(history, JobHistory) else kept
        self.router = router.install(self.sc) if router is not None else None
        self.cores = self.sc.defaultParallelism
        self.admissions: list[Admission] = []
        self._telemetry = telemetry(spark)
        self._clock = clock
        self._waiting: list[Waiting] = []
        self._running = 0
        self._ids = itertools.count(1)
        self._lock = threading.Condition()

    @contextlib.contextmanager
    def job(self, shape: str, *, description: str | None = None):
        """Run the block as one gated job of ``shape``: wait for release, run, then learn its work.

        The block's Spark jobs run in a job group of their own (``yaq-<shape>-<n>``) and, with a
        router, in its pool; the calling thread's properties are restored afterwards.
        """
        name = f"yaq-{shape}-{next(self._ids)}"
        estimate = self.history.estimate(shape)
        ticket = Waiting(name, self._clock(), None if estimate is None else estimate.length_s(self.cores),
                         None if estimate is None else estimate.tasks)
        self._enter(ticket)
        waited = self._clock() - ticket.arrival_s
        pool = None if self.router is None else self.router.pool_for(estimate)
        mark = self._telemetry.mark()
        try:
            with local_properties.restored(self.sc, local_properties.JOB_GROUP_AND_POOL):
                self.sc.setJobGroup(name, description or f"gated {shape}")
                if pool is not None:
                    self.sc.setLocalProperty("spark.scheduler.pool", pool)
                yield ticket
        finally:
            self._leave()
            task_s, tasks = self._work_of(name, mark)
            self._learn(shape, task_s, tasks)
            self.admissions.append(Admission(name, shape, estimate, pool, waited, task_s, tasks))

    def sql(self, query: str):
        """``spark.sql(query).collect()`` as a gated job whose shape is the query's (:func:`sql_shape`)."""
        with self.job(sql_shape(query), description=" ".join(query.split())[:200]):
            return self.spark.sql(query).collect()

    def __call__(self, shape: str):
        """Decorator: every call of the function is a gated job of ``shape``."""
        def wrap(fn):
            def gated(*args, **kwargs):
                with self.job(shape):
                    return fn(*args, **kwargs)
            gated.__name__, gated.__doc__ = fn.__name__, fn.__doc__
            return gated
        return wrap

    # -- the gate ----------------------------------------------------------------------------
    def _enter(self, ticket: Waiting) -> None:
        with self._lock:
            self._waiting.append(ticket)
            while not (self._running < self.max_in_flight and self._next() is ticket):
                # Starvation turns on with time alone: look again before the next threshold can pass.
                self._lock.wait(0.25)
            self._waiting.remove(ticket)
            self._running += 1
            self._lock.notify_all()

    def _leave(self) -> None:
        with self._lock:
            self._running -= 1
            self._lock.notify_all()

    def _next(self) -> Waiting:
        return release_order(self._waiting, self._clock(), policy=self.policy, hard_s=self.hard_s,
                             ratio=self.ratio)[0]

    # -- learning ----------------------------------------------------------------------------
    def _work_of(self, group: str, since: int) -> tuple[float | None, int | None]:
        """Task-seconds and tasks of the Spark jobs of ``group`` finished since telemetry mark ``since``."""
        jobs = self._telemetry.jobs(since)
        mine = jobs.filter(pc.equal(jobs["jobGroup"], group)) if jobs.num_rows else jobs
        if not mine.num_rows:
            return None, None
        return pc.sum(mine["runTimeMs"]).as_py() / 1000.0, int(pc.sum(mine["tasks"]).as_py())

    def _learn(self, shape: str, task_s: float | None, tasks: int | None) -> None:
        if task_s is None:
            return  # the block ran no Spark job: nothing to learn
        with self._lock:
            self.history.record(shape, task_s=task_s, tasks=tasks)
            if self._history_path:
                self.history.save(self._history_path)
