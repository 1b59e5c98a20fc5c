"""Unmodified ``pyspark.ml`` estimators as SLAQ jobs: ``slaq.fit(estimator, df, job)`` for ``estimator.fit(df)``.

MLlib says nothing to its caller until ``fit`` returns, but it logs every iteration's objective on
the thread that runs ``fit`` (breeze's L-BFGS/OWL-QN, ML's ``Instrumentation``, the boosting
loop). The JVM side, ``dev.sparkrm.slaq.ObjectiveFeed``, listens to exactly those lines and queues
them per SLAQ job; :func:`fit` drains the queue while the estimator trains and reports each
iteration to the job, so the predictor sees the loss curve live, as the thesis's modified MLlib
did, with the estimator itself unchanged.

Cores: the fit starts when the job holds cores and runs on exactly that many: its input is
coalesced, without a shuffle, to the grant, so no stage over the input has more tasks than the
grant (with ``spark.scheduler.mode=FAIR`` it also runs in the job's pool). MLlib's loops cannot
change their parallelism mid-fit, so when the job's grant falls below the cores its fit runs on,
the fit waits at its next iteration boundary (the JVM holds the fitting thread right after it
logs the iteration; no task is killed) until the grant is back. Jobs that train several models
(a grid, folds, a pipeline refit) are re-sized at every ``fit``. Not capped: MLlib's own shuffles
(the per-iteration sums of KMeans and GaussianMixture, a tree's split search) and the collections
it parallelizes take ``spark.default.parallelism`` partitions, an application-wide setting.

Results equal an unscheduled ``estimator.fit`` of the same rows: the estimator is the user's own,
with its own parameters. Where an estimator draws random samples per partition (the k-means||
and random initializations of KMeans, GaussianMixture's initial sample) or its path depends on the
order of its sums (the perceptron's L-BFGS), coalescing changes the draw: the result is then that
of ``estimator.fit(df.coalesce(cores))``, an equally valid start, and ``keep_partitions=True``
keeps the input's partitions (the grant then bounds the job's FAIR share, not its task count).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass

from .. import local_properties

LOG = logging.getLogger(__name__)

#: Local property the JVM feed reads on the fitting thread (``ObjectiveFeed.JOB_PROPERTY``).
JOB_PROPERTY = "sparkrm.slaq.job"
#: Thread-local Spark properties a fit sets: SLAQ's job, its job group and its FAIR pool.
_THREAD_PROPERTIES = (JOB_PROPERTY, "spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel",
                      "spark.scheduler.pool")


@dataclass(frozen=True)
class Objective:
    """How an estimator's logged objective becomes a SLAQ loss (lower is better)."""

    name: str
    sign: float = 1.0  # -1 for a quantity that grows as the model improves (a log-likelihood)


#: pyspark.ml estimator class name -> the objective its iterations log.
OBJECTIVES = {
    "LogisticRegression": Objective("regularized log loss (L-BFGS / OWL-QN)"),
    "LinearRegression": Objective("regularized squared loss (L-BFGS / OWL-QN)"),
    "LinearSVC": Objective("regularized hinge loss (OWL-QN)"),
    "MultilayerPerceptronClassifier": Objective("cross-entropy (L-BFGS)"),
    "KMeans": Objective("within-cluster sum of squares"),
    "GaussianMixture": Objective("log-likelihood", sign=-1.0),
    "GBTClassifier": Objective("training loss of the ensemble"),
    "GBTRegressor": Objective("training loss of the ensemble"),
}


def fit(estimator, df, job, *, params: dict | None = None, keep_partitions: bool = False, poll_s: float = 0.05):
    """Fit ``estimator`` on ``df`` as SLAQ job ``job``; returns the model ``estimator.fit(df, params)`` returns.

    Parameters
    ----------
    estimator : pyspark.ml estimator
        One of :data:`OBJECTIVES`' classes, unchanged (any parameters). Another estimator still
        fits, on its grant, as one step nobody can see into (a warning says so).
    df : DataFrame
        The training data, as for ``estimator.fit``.
    job : TrainingJob
        From :meth:`SlaqScheduler.job`; every iteration is reported to it.
    keep_partitions : bool, default=False
        Keep ``df``'s partitioning instead of coalescing it to the grant (see the module docstring).
    poll_s : float, default=0.05
        How often the feed is drained while the estimator trains.

    Examples
    --------
    >>> with SlaqScheduler(spark) as slaq, slaq.job("churn") as job:       # doctest: +SKIP
    ...     model = fit(LogisticRegression(maxIter=100), train_df, job)    # was: lr.fit(train_df)
    """
    kind = type(estimator).__name__
    objective = OBJECTIVES.get(kind)
    if objective is None:
        LOG.warning("SLAQ cannot see the iterations of %s (it logs no per-iteration objective): it trains as one "
                    "step on the cores granted when it starts; supported: %s", kind, ", ".join(sorted(OBJECTIVES)))
    sc = df.sparkSession.sparkContext
    # The job's group, pool and name are this thread's until the fit ends; then the caller's again.
    with local_properties.restored(sc, _THREAD_PROPERTIES):
        cores = job.wait_for_cores()
        if not keep_partitions and df.rdd.getNumPartitions() > cores:
            df = df.coalesce(cores)
        feed = sc._jvm.dev.sparkrm.slaq.ObjectiveFeed.install()
        relay = _Relay(feed, job, objective, cores, poll_s)
        sc.setLocalProperty(JOB_PROPERTY, job.name)
        relay.start()
        try:
            return estimator.fit(df, params) if params is not None else estimator.fit(df)
        finally:
            relay.stop()
            feed.close(job.name)


def _epoch_ms() -> float:
    """The wall clock in ms since the epoch: the JVM feed stamps each objective with the same clock."""
    return time.time() * 1000.0


class _Relay:
    """Moves the job's logged objectives from the JVM feed to ``job`` while the estimator trains.

    An iteration's wall time is the gap between its objective's stamp and the previous one (the first:
    since the relay started), less the time the fit was held meanwhile; ``clock_ms`` is the clock the
    stamps are compared with (tests pass one they move).
    """

    def __init__(self, feed, job, objective: Objective | None, cores: int, poll_s: float, clock_ms=_epoch_ms):
        self.feed, self.job, self.objective, self.cores, self.poll_s = feed, job, objective, cores, poll_s
        self.iteration = len(job.history)  # a job may fit several models: keep counting
        self._clock_ms = clock_ms
        self._last_ms = clock_ms()
        self._held_since: float | None = None  # epoch ms the fit was last held, while it is
        self._held_ms = 0.0  # time held since the last reported iteration: not the iteration's
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"slaq-feed-{job.name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        self._thread.join()
        self._drain()  # lines logged between the last poll and the end of fit

    def _run(self) -> None:
        while not self._done.wait(self.poll_s):
            self._drain()
            self._hold(not self.job.finished and self.job.cores < self.cores)

    def _hold(self, hold: bool) -> None:
        """Tell the JVM when the fit's hold changes (not every poll), and keep the time spent held."""
        if hold == (self._held_since is not None):
            return
        now = self._clock_ms()
        if hold:
            self._held_since = now
        else:
            self._held_ms += now - self._held_since
            self._held_since = None
        self.feed.hold(self.job.name, hold)

    def _drain(self) -> None:
        if self.objective is None:
            return
        flat = list(self.feed.drain(self.job.name))
        for value, at_ms in zip(flat[0::2], flat[1::2]):
            wall_s = max(at_ms - self._last_ms - self._held_ms, 0.0) / 1000.0
            self._last_ms, self._held_ms = at_ms, 0.0
            if not math.isfinite(value):
                LOG.warning("SLAQ job %r: %s logged a non-finite objective (%s) at iteration %d; not reported",
                            self.job.name, self.objective.name, value, self.iteration)
                continue
            # MLlib's tasks run in the JVM, where Python cannot time them: the iteration held its
            # cores for its wall time, which is what the runtime model needs to scale it.
            self.job.record(self.iteration, self.objective.sign * value, wall_s * self.cores, 1.0,
                            wall_s, self.cores)
            self.iteration += 1
