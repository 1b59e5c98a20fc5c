"""Unmodified ``pyspark.ml`` estimators as SLAQ jobs: ``slaq.fit(estimator, df, job)`` for ``estimator.fit(df)``.

MLlib says nothing to its caller until ``fit`` returns, but it logs every iteration's objective on
the thread that runs ``fit`` (breeze's L-BFGS/OWL-QN, ML's ``Instrumentation``, the boosting
loop). The JVM side, ``dev.sparkrm.slaq.ObjectiveFeed``, listens to exactly those lines and queues
them per SLAQ job; :func:`fit` drains the queue while the estimator trains and reports each
iteration to the job, so the predictor sees the loss curve live, as the thesis's modified MLlib
did, with the estimator itself unchanged.

Cores: the fit starts when the job holds cores, and follows its grant in one of two ways:

* ``enforce="width"`` (the default): the input is coalesced, without a shuffle, to the grant, so no
  stage over the input has more tasks than the grant; MLlib's loops cannot change their parallelism
  mid-fit, so when the grant falls below the cores the fit runs on, the fit waits at its next
  iteration boundary until the grant is back, and a larger grant is taken only by the job's next
  ``fit``. Not capped: MLlib's own shuffles and the collections it parallelizes take
  ``spark.default.parallelism`` partitions, an application-wide setting.
* ``enforce="share"`` (needs ``spark.scheduler.mode=FAIR``): the input keeps its partitions and the
  fit runs in the FAIR pool of its grant (``minShare = weight = cores``). At every iteration
  boundary the JVM moves the fitting thread to the pool of the job's current grant,
  so a fit is re-sized mid-fit, up as well as down, and the share covers every stage of the fit,
  MLlib's own shuffles included. A job granted no cores waits at its next boundary. The grant is a
  share when jobs contend, not a ceiling: a pool takes idle slots nobody else wants. Its cost:
  every iteration runs as many tasks as the input has partitions. Where tasks are small (40,000
  rows in four partitions on two cores) the benchmark's mix took 1.4-2.0x longer to finish under
  ``"share"`` than under ``"width"``, whatever the policy.

Either way the JVM holds the fitting thread right after it logs the iteration: no task is killed.
Jobs that train several models (a grid, folds, a pipeline refit) start each ``fit`` on their grant.

Results equal an unscheduled ``estimator.fit`` of the same rows: the estimator is the user's own,
with its own parameters, and with ``"share"`` its input is the user's own too. ``"width"`` coalesces
the input, so where an estimator draws random samples per partition (the k-means|| and random
initializations of KMeans, GaussianMixture's initial sample) or its path depends on the order of its
sums (the perceptron's L-BFGS), the result is that of ``estimator.fit(df.coalesce(cores))``, an
equally valid start.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass

from .. import local_properties
from ..arguments import number
from ..errors import UsageError
from ..pools import fair_scheduling
from .scheduler import TrainingJob

LOG = logging.getLogger(__name__)

#: Local property the JVM feed reads on the fitting thread (``ObjectiveFeed.JOB_PROPERTY``).
JOB_PROPERTY = "sparkrm.slaq.job"
#: Thread-local Spark properties a fit sets: SLAQ's job, its job group and its FAIR pool.
_THREAD_PROPERTIES = (JOB_PROPERTY, *local_properties.JOB_GROUP_AND_POOL)


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


#: How a fit follows its grant (see the module docstring).
ENFORCEMENT = ("width", "share")


def fit(estimator, df, job, *, params: dict | None = None, enforce: str = "width", poll_s: float = 0.05):
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
    enforce : {"width", "share"}, default="width"
        How the fit follows its grant (see the module docstring): ``"width"`` coalesces the input to
        the grant; ``"share"`` keeps the input and re-sizes the running fit through FAIR pools (it
        needs ``spark.scheduler.mode=FAIR``).
    poll_s : float, default=0.05
        How often the feed is drained while the estimator trains.

    Examples
    --------
    >>> with SlaqScheduler(spark) as slaq, slaq.job("churn") as job:       # doctest: +SKIP
    ...     model = fit(LogisticRegression(maxIter=100), train_df, job)    # was: lr.fit(train_df)
    """
    _check_arguments(estimator, df, job, poll_s)
    kind = type(estimator).__name__
    objective = OBJECTIVES.get(kind)
    if objective is None:
        LOG.warning("SLAQ cannot see the iterations of %s (it logs no per-iteration objective): it trains as one "
                    "step on the cores granted when it starts; supported: %s", kind, ", ".join(sorted(OBJECTIVES)))
    sc = df.sparkSession.sparkContext
    _check_enforcement(sc, enforce)
    # The job's group, pool and name are this thread's until the fit ends; then the caller's again.
    with local_properties.restored(sc, _THREAD_PROPERTIES):
        cores = job.wait_for_cores()
        if enforce == "width" and df.rdd.getNumPartitions() > cores:
            df = df.coalesce(cores)
        feed = sc._jvm.dev.sparkrm.slaq.ObjectiveFeed.install()
        feed.begin(job.name, cores)
        relay = _Relay(feed, job, objective, cores, enforce, poll_s)
        sc.setLocalProperty(JOB_PROPERTY, job.name)
        relay.start()
        try:
            return estimator.fit(df, params) if params is not None else estimator.fit(df)
        finally:
            relay.stop()
            feed.close(job.name)


def _check_arguments(estimator, df, job, poll_s) -> None:
    """Refuse, in one line naming the argument, what :func:`fit` was given in the wrong place (before any Spark
    work: ``slaq.fit(lr, df, "churn")`` passes the job's name where its handle goes)."""
    if not isinstance(job, TrainingJob):
        raise UsageError(f"slaq.fit's job must be the TrainingJob SlaqScheduler.job(name) returns. Got {job!r} "
                         f"({type(job).__name__}). Pass the handle: with SlaqScheduler(spark) as slaq, "
                         "slaq.job('churn') as job: fit(estimator, df, job).")
    if not callable(getattr(estimator, "fit", None)):
        raise UsageError(f"slaq.fit's estimator must be a pyspark.ml estimator (with fit). Got {estimator!r} "
                         f"({type(estimator).__name__}). Pass e.g. LogisticRegression(maxIter=100).")
    if not hasattr(df, "sparkSession"):
        raise UsageError(f"slaq.fit's df must be a Spark DataFrame. Got {type(df).__name__}. Pass the training "
                         "data as estimator.fit takes it, e.g. spark.read.parquet(path).")
    number(poll_s, what="slaq.fit's poll_s", low=0, low_open=True, fix="Pass seconds, e.g. 0.05.")


def _check_enforcement(sc, enforce: str) -> None:
    """Refuse an ``enforce`` argument :func:`fit` cannot apply, in one line with the fix."""
    if enforce not in ENFORCEMENT:
        raise UsageError(f"enforce must be one of {list(ENFORCEMENT)}. Got {enforce!r}.")
    if enforce == "share" and not fair_scheduling(sc):
        raise ValueError("enforce='share' re-sizes a running fit through FAIR pools: set "
                         "spark.scheduler.mode=FAIR, or use enforce='width'.")


def _epoch_ms() -> float:
    """The wall clock in ms since the epoch: the JVM feed stamps each objective with the same clock."""
    return time.time() * 1000.0


class _Relay:
    """Moves the job's logged objectives from the JVM feed to ``job`` while the estimator trains, and the
    job's grant to the JVM: held while the fit cannot run on it, re-routed (``"share"``) when it changes.

    An iteration's wall time is the gap between its objective's stamp and the previous one (the first:
    since the relay started), less the time the fit was held meanwhile; ``clock_ms`` is the clock the
    stamps are compared with (tests pass one they move).
    """

    def __init__(self, feed, job, objective: Objective | None, cores: int, enforce: str, poll_s: float,
                 clock_ms=_epoch_ms):
        self.feed, self.job, self.objective, self.enforce, self.poll_s = feed, job, objective, enforce, poll_s
        self.cores = cores  # the cores the fit runs on ("share": the latest routed grant)
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
            self._follow()

    def _follow(self) -> None:
        """Make the fit follow the job's current grant: hold it, release it, or ("share") re-route it."""
        granted = 0 if self.job.finished else self.job.cores
        if self.enforce == "share":
            self._hold(granted == 0)
            if 0 < granted != self.cores:
                self._route(granted)
        else:
            self._hold(granted < self.cores)

    def _route(self, cores: int) -> None:
        """Send the fit's iterations after its next boundary to the pool and group of ``cores``."""
        route = self.job.route(cores)
        self.feed.route(self.job.name, route.pool, route.group, route.description, cores)
        self.cores = cores

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
        for value, at_ms, cores in zip(flat[0::3], flat[1::3], flat[2::3]):
            wall_s = max(at_ms - self._last_ms - self._held_ms, 0.0) / 1000.0
            self._last_ms, self._held_ms = at_ms, 0.0
            if not math.isfinite(value):
                LOG.warning("SLAQ job %r: %s logged a non-finite objective (%s) at iteration %d; not reported",
                            self.job.name, self.objective.name, value, self.iteration)
                continue
            # MLlib's tasks run in the JVM, where Python cannot time them: the iteration held its
            # cores for its wall time, which is what the runtime model needs to scale it.
            cores = int(cores) or self.cores
            self.job.record(self.iteration, self.objective.sign * value, wall_s * cores, 1.0, wall_s, cores)
            self.iteration += 1
