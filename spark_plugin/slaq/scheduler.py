"""The SLAQ epoch loop for training jobs that share one Spark application (spec 3.6, 9.1.7-8).

Each training job runs its loop in its own driver thread and talks to the scheduler through a
:class:`TrainingJob` handle: ``cores = job.wait_for_cores()`` before an iteration's Spark job, and
``job.report(k, loss, cpu_time_s=...)`` after it. A scheduler thread re-decides every job's cores
once per epoch (and at once when a job arrives or finishes, so finished jobs release their cores
without waiting) by feeding each job's history through the predictor into :func:`.allocate`.

Enforcement happens at iteration boundaries, never mid-iteration (running tasks are not killed):

* a job granted 0 cores blocks in :meth:`TrainingJob.wait_for_cores` until it gets some;
* a job granted ``n`` cores runs its iteration as ``n`` tasks (the trainers coalesce the cached
  partitions to ``n``; a user loop does the same with the returned number), so it cannot occupy
  more than ``n`` task slots;
* under ``spark.scheduler.mode=FAIR`` the iteration also runs in a pool with ``minShare = weight
  = n`` (:func:`spark_plugin.pools.fair_pool`), so jobs that contend for slots share them in
  proportion to their grants.

The fair baseline (``policy="fair"``) goes through the same loop and enforcement: equal shares
recomputed on every arrival and departure and every epoch; with fewer cores than jobs the jobs
that have had the fewest core-seconds so far get the cores, so it rotates rather than starves.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..pools import fair_pool, fair_scheduling
from .allocator import JobCurve, allocate
from .predictor import LossPredictor, RuntimeModel, epoch_curve
from .quality import LossHistory

LOG = logging.getLogger(__name__)

#: Policy name -> the allocator objective it uses.
POLICIES = {"slaq": "reduction", "maxmin": "maxmin", "fair": "fair"}


@dataclass(frozen=True)
class EpochRecord:
    """One allocation decision: when (seconds since the scheduler started), who got what, how long it took."""

    time_s: float
    cores: dict
    decision_ms: float


@dataclass(frozen=True)
class Route:
    """A job step's Spark job group, its description and its FAIR pool (``None`` outside FAIR mode)."""

    group: str
    description: str
    pool: str | None


class IterationClock:
    """Wall time of the iteration in flight, from the first core request that started it to its report.

    An iteration may run several Spark jobs (an L-BFGS line search); it is timed from the first
    and counted on the fewest cores any of them had.
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter):
        self._clock = clock
        self._running: tuple[float, int] | None = None

    def started(self, cores: int) -> None:
        if self._running is None:
            self._running = (self._clock(), cores)
        else:
            self._running = (self._running[0], min(self._running[1], cores))

    def stopped(self) -> tuple[float | None, int | None]:
        """``(wall seconds, cores)`` of the iteration that just ended, ``(None, None)`` if none was timed."""
        running, self._running = self._running, None
        return (None, None) if running is None else (self._clock() - running[0], running[1])


class TrainingJob:
    """One training job's handle: ask for cores before an iteration, report its loss after it.

    Create it with :meth:`SlaqScheduler.job`. Use it as a context manager (or call
    :meth:`finish`) so the job's cores are released when the loop ends, also on an error.
    """

    def __init__(self, scheduler: "SlaqScheduler", name: str, weight: float, max_cores: int | None):
        self.name, self.weight, self.max_cores = name, weight, max_cores
        self.history = LossHistory()
        self.runtime = RuntimeModel()
        self.cores = 0
        self.finished = False
        self.arrival_s = scheduler.clock()
        self.core_seconds = 0.0  # cores granted x time, what the fair baseline rotates on
        self._scheduler = scheduler
        self._steps = 0
        self._clock = IterationClock(scheduler._time)

    def wait_for_cores(self, timeout: float | None = None) -> int:
        """Block until this job holds cores, route the calling thread's next Spark jobs to them, return how many.

        Raises
        ------
        TimeoutError
            When ``timeout`` seconds pass with no cores granted.
        RuntimeError
            When the job has finished or the scheduler has stopped.
        """
        cores = self._scheduler._wait_for_cores(self, timeout)
        self._clock.started(cores)
        sc = self._scheduler.sc
        if sc is None:  # a coordinator's stand-in for a job in another application
            return cores
        route = self.route(cores)
        sc.setJobGroup(route.group, route.description)
        if route.pool is not None:
            sc.setLocalProperty("spark.scheduler.pool", route.pool)
        return cores

    def route(self, cores: int) -> "Route":
        """Where the job's next step on ``cores`` runs: a job group of its own (named ``slaq-<job>-<step>-c<cores>``,
        so Spark's UI and telemetry show each step's grant) and, under FAIR, the pool of that grant."""
        self._steps += 1
        sc = self._scheduler.sc
        return Route(f"slaq-{self.name}-{self._steps}-c{cores}", f"SLAQ {self.name} step {self._steps} on {cores} cores",
                     fair_pool(sc, f"slaq-{self.name}", cores) if self._scheduler.fair else None)

    def report(self, iteration: int, loss: float, *, cpu_time_s: float | None = None,
               data_size: float = 1.0) -> None:
        """Record a finished iteration: its loss and, if measured, the CPU seconds its tasks used.

        ``data_size`` is the data the iteration processed (``S`` in ``c * S / N``; 1.0 means one
        full pass). The iteration's wall time, from the :meth:`wait_for_cores` that started it,
        teaches the runtime model its per-iteration overhead. Errors for a non-finite loss or a
        non-increasing iteration come from :meth:`LossHistory.record`.
        """
        self.record(iteration, loss, cpu_time_s, data_size, *self._clock.stopped())

    def record(self, iteration, loss, cpu_time_s, data_size, wall_s, cores) -> None:
        """:meth:`report` with the iteration's wall time and cores measured elsewhere (by a remote application)."""
        with self._scheduler._lock:
            self.history.record(iteration, loss, cpu_time_s=cpu_time_s, data_size=data_size,
                                time_s=self._scheduler.clock())
            if cpu_time_s is not None and cpu_time_s > 0:
                self.runtime.update(cpu_time_s, data_size, wall_s=wall_s, cores=cores)

    def finish(self) -> None:
        """Leave the scheduler; this job's cores go to the others at once."""
        self._scheduler._finish(self)

    def __enter__(self) -> "TrainingJob":
        return self

    def __exit__(self, *exc) -> None:
        self.finish()


class SlaqScheduler:
    """Re-allocates one application's cores among its training jobs every epoch.

    Parameters
    ----------
    spark : SparkSession or None
        The application whose task slots are shared; ``None`` for a scheduler that only decides
        (the cross-application :class:`~spark_plugin.slaq.coordinator.Coordinator`).
    cores : int, default=None
        Slots to share; default ``sparkContext.defaultParallelism`` (every executor core).
    policy : {"slaq", "maxmin", "fair"}, default="slaq"
        ``slaq``: maximize the predicted total normalized loss reduction (Objective A);
        ``maxmin``: raise the worst job's predicted quality first (Objective B); ``fair``: the
        work-conserving fair baseline.
    epoch_s : float, default=1.0
        Seconds between decisions (the thesis uses hundreds of ms to a few s).
    predictor : LossPredictor, default=None
        The loss predictor; default ``LossPredictor()``.
    clock : callable, default=time.perf_counter
        Seconds (any origin) that every time-based decision and record reads: epochs, grants' core
        seconds, iteration times, the timeline, waits for cores. Tests pass a clock they move.

    Examples
    --------
    >>> with SlaqScheduler(spark, policy="slaq") as slaq:          # doctest: +SKIP
    ...     with slaq.job("logreg") as job:
    ...         LogisticRegressionGD(max_iter=50).fit(data, job)
    """

    def __init__(self, spark, *, cores: int | None = None, policy: str = "slaq", epoch_s: float = 1.0,
                 predictor: LossPredictor | None = None, clock: Callable[[], float] = time.perf_counter):
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {sorted(POLICIES)}. Got {policy!r}.")
        if not (isinstance(epoch_s, (int, float)) and epoch_s > 0):
            raise ValueError(f"epoch_s must be a number of seconds > 0. Got {epoch_s!r}. Use e.g. 1.0.")
        self.sc = None if spark is None else spark.sparkContext
        self.cores = int(cores or (self.sc.defaultParallelism if self.sc else 0))
        if self.cores < 1:
            raise ValueError(f"cores must be >= 1 (and given when there is no Spark session). Got {cores!r}.")
        self.policy, self.epoch_s = policy, float(epoch_s)
        self.predictor = predictor or LossPredictor()
        self.fair = self.sc is not None and fair_scheduling(self.sc)
        if self.sc is not None and not self.fair:
            LOG.warning("spark.scheduler.mode is not FAIR: SLAQ enforces cores by per-iteration parallelism only")
        self.jobs: dict[str, TrainingJob] = {}
        self.timeline: list[EpochRecord] = []
        self._forecasts: dict[str, tuple] = {}  # job -> (reports fitted, Forecast), for the epoch thread
        self._lock = threading.Condition()
        self._poked = False
        self._stopped = False
        self._thread: threading.Thread | None = None
        self._time = clock
        self._started = clock()
        self._last_decision = 0.0

    def clock(self) -> float:
        """Seconds since the scheduler was created (the time base of reports and the timeline)."""
        return self._time() - self._started

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> "SlaqScheduler":
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="slaq-scheduler", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            self._lock.notify_all()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> "SlaqScheduler":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def job(self, name: str, *, weight: float = 1.0, max_cores: int | None = None) -> TrainingJob:
        """Register a training job; it gets cores at the next decision, which this triggers."""
        if not (isinstance(weight, (int, float)) and weight > 0):
            raise ValueError(f"weight must be a number > 0. Got {weight!r} for job {name!r}.")
        with self._lock:
            if name in self.jobs:
                raise ValueError(f"a job named {name!r} is already registered; give each job its own name.")
            job = self.jobs[name] = TrainingJob(self, name, float(weight), max_cores)
            self._poke()
        return job

    def active(self) -> list[TrainingJob]:
        return [j for j in self.jobs.values() if not j.finished]

    # -- the epoch loop ----------------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            self.reallocate()
            with self._lock:
                if not self._poked and not self._stopped:
                    self._lock.wait(self.epoch_s)
                self._poked = False
                if self._stopped:
                    return

    def reallocate(self) -> dict:
        """Decide every active job's cores now; returns ``{job: cores}``."""
        started = self._time()
        with self._lock:
            now = self.clock()
            for job in self.jobs.values():  # account the grants that end now
                job.core_seconds += job.cores * (now - self._last_decision)
            self._last_decision = now
            active = self.active()
            if self.policy == "fair":  # least served first: the remainder rotates
                active.sort(key=lambda j: (j.core_seconds, j.arrival_s))
            # Copies, so that curve fitting runs outside the lock (reports and core requests of
            # every job would otherwise wait for all the fits of an epoch); a job that has not
            # reported since its last fit keeps its forecast and needs no copy.
            self._forecasts = {job.name: self._forecasts[job.name] for job in active if job.name in self._forecasts}
            snapshots = [(job, *self._forecast_or_history(job), copy.deepcopy(job.runtime)) for job in active]
        curves = [self._curve(*snapshot) for snapshot in snapshots]
        grant = allocate(curves, self.cores, objective=POLICIES[self.policy]) if curves else {}
        with self._lock:
            for job in active:
                job.cores = 0 if job.finished else grant.get(job.name, 0)
            self._lock.notify_all()
        record = EpochRecord(now, dict(grant), 1000 * (self._time() - started))
        self.timeline.append(record)
        return record.cores

    def _forecast_or_history(self, job: TrainingJob) -> tuple:
        """``(last forecast, None)`` while it is current, else ``(None, a copy of the history to fit)``.

        The caller holds the lock; the fair policy needs neither.
        """
        if self.policy == "fair":
            return None, None
        reports, forecast = self._forecasts.get(job.name, (-1, None))
        return (forecast, None) if reports == len(job.history) else (None, copy.deepcopy(job.history))

    def _curve(self, job: TrainingJob, forecast, history: LossHistory | None, runtime: RuntimeModel) -> JobCurve:
        """``job``'s predicted gain per core count, from its current ``forecast`` or by fitting ``history``."""
        if self.policy == "fair":
            return JobCurve(job.name, max_cores=job.max_cores)
        objective = "reduction" if self.policy == "slaq" else "loss"
        if history is not None:
            forecast = self.predictor.forecast(history)
            self._forecasts[job.name] = (len(history), forecast)
        return JobCurve(job.name, epoch_curve(forecast, runtime, self.epoch_s, objective=objective),
                        weight=job.weight, max_cores=job.max_cores)

    def _poke(self) -> None:
        """Wake the loop for an immediate decision (caller holds the lock)."""
        self._poked = True
        self._lock.notify_all()

    def _wait_for_cores(self, job: TrainingJob, timeout: float | None) -> int:
        deadline = None if timeout is None else self._time() + timeout
        with self._lock:
            while True:
                if job.finished or self._stopped:
                    raise RuntimeError(f"SLAQ job {job.name!r} cannot run: it has finished or the scheduler stopped.")
                if job.cores > 0:
                    return job.cores
                left = None if deadline is None else deadline - self._time()
                if left is not None and left <= 0:
                    raise TimeoutError(f"SLAQ job {job.name!r} got no cores within {timeout} s.")
                self._lock.wait(left)

    def _finish(self, job: TrainingJob) -> None:
        with self._lock:
            if not job.finished:
                job.core_seconds += job.cores * (self.clock() - self._last_decision)
                job.finished, job.cores = True, 0
                self._poke()
