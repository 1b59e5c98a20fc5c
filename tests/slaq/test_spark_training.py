"""SLAQ on real Spark: sparkrm's trainers and unmodified pyspark.ml estimators give the exact answers
(an estimator's model is the one an unscheduled fit gives, its loss live), the scheduler enforces its grants.

One two-executor ``local-cluster`` (two JVMs, one task slot each) in FAIR mode, with telemetry, so
a job's concurrent tasks can be read back from the executors' task records. Both halves need this very
session, so they share one module and one start of it. The estimators' input has 4 partitions and a
lone job is granted both cores, so every ``"width"`` fit is coalesced and every ``"share"`` fit runs on
the input as it is.
"""

import threading

import numpy as np
import pyarrow.compute as pc
import pytest
from pyspark.ml.classification import GBTClassifier, LogisticRegression
from pyspark.ml.clustering import GaussianMixture, KMeans
from pyspark.ml.linalg import Vectors
from scipy.special import expit
from sklearn.datasets import make_blobs, make_classification, make_regression
from sklearn.svm import LinearSVC

import spark_plugin
from spark_plugin import slaq
from spark_plugin.telemetry_reader import max_concurrent_tasks
from spark_plugin.slaq.scheduler import SlaqScheduler
from spark_plugin.slaq.trainers import (KMeansLloyd, LinearRegressionLBFGS, LinearSVMGD, LogisticRegressionGD,
                                        TrainingData)

SPARK_SESSION = dict(master="local-cluster[2,1,1024]", features=["telemetry"], conf={"spark.scheduler.mode": "FAIR"})


@pytest.fixture(scope="module")
def classification(spark):
    x, y = make_classification(600, 8, n_informative=5, random_state=1)
    return x, y, TrainingData.from_numpy(spark.sparkContext, x, y, partitions=4)


def reference_logistic_gd(x, y, step, reg, iterations):
    """Plain numpy gradient descent on the mean log loss + reg/2 |w|^2 (intercept unpenalized)."""
    w, b, losses = np.zeros(x.shape[1]), 0.0, []
    for _ in range(iterations):
        p = expit(x @ w + b)
        losses.append(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)) + 0.5 * reg * w @ w)
        w, b = w - step * (x.T @ (p - y) / len(y) + reg * w), b - step * np.mean(p - y)
    return w, b, losses


@pytest.mark.parametrize("cores", [1, 2])
def test_logistic_regression_matches_plain_gradient_descent_on_any_core_count(classification, cores):
    x, y, data = classification

    class Fixed:  # a job handle pinned to ``cores``: exactness must not depend on the grant
        def wait_for_cores(self, timeout=None):
            return cores

        def report(self, *a, **k):
            pass

    model = LogisticRegressionGD(step=0.5, reg=1e-3, max_iter=8).fit(data, Fixed())
    w, b, losses = reference_logistic_gd(x, y, 0.5, 1e-3, 8)
    np.testing.assert_allclose(model.coef_, w, rtol=1e-9, atol=1e-12)
    assert model.intercept_ == pytest.approx(b, abs=1e-12)
    np.testing.assert_allclose(model.loss_curve_, losses, rtol=1e-9)


def test_kmeans_matches_lloyd_from_the_same_start(spark):
    x, _ = make_blobs(500, 3, centers=4, random_state=2)
    data = TrainingData.from_numpy(spark.sparkContext, x, partitions=3)
    model = KMeansLloyd(4, max_iter=5, seed=3).fit(data)
    centers = data.sample_rows(4, 3)  # the trainer's start
    for _ in range(5):
        nearest = ((x[:, None, :] - centers[None]) ** 2).sum(-1).argmin(1)
        centers = np.array([x[nearest == c].mean(0) if (nearest == c).any() else centers[c] for c in range(4)])
    np.testing.assert_allclose(model.cluster_centers_, centers, rtol=1e-9)
    assert all(a >= b - 1e-12 for a, b in zip(model.loss_curve_, model.loss_curve_[1:])), "Lloyd never raises the loss"


def test_lbfgs_linear_regression_reaches_the_ridge_solution(spark):
    x, y = make_regression(400, 6, noise=5.0, random_state=4)
    data = TrainingData.from_numpy(spark.sparkContext, x, y, partitions=4)
    model = LinearRegressionLBFGS(reg=1e-3, max_iter=40).fit(data)
    xc, yc = x - x.mean(0), y - y.mean()  # ridge with an unpenalized intercept, closed form
    w = np.linalg.solve(xc.T @ xc / len(y) + 1e-3 * np.eye(6), xc.T @ yc / len(y))
    np.testing.assert_allclose(model.coef_, w, rtol=1e-5)
    assert model.intercept_ == pytest.approx(y.mean() - x.mean(0) @ w, rel=1e-5, abs=1e-6)
    assert model.loss_curve_[-1] < model.loss_curve_[0]


def test_svm_classifies_about_as_well_as_liblinear(classification):
    x, y, data = classification
    model = LinearSVMGD(step=1.0, reg=1e-3, max_iter=10).fit(data)
    accuracy = np.mean(((x @ model.coef_ + model.intercept_) > 0) == (y == 1))
    assert accuracy >= LinearSVC(C=1.0).fit(x, y).score(x, y) - 0.03
    assert model.loss_curve_[-1] < 0.6 * model.loss_curve_[0]


#: Iterations of each of the three concurrent jobs: enough that every job waits for a core at some point.
ITERATIONS = 8


def _run_jobs(spark, data, policy, names, iterations=ITERATIONS):
    """Train one logistic regression per name concurrently under ``policy``; returns (scheduler, models)."""
    models = {}
    with SlaqScheduler(spark, cores=2, policy=policy, epoch_s=0.2) as slaq:
        def train(name, step):
            with slaq.job(name, max_cores=data.partitions) as job:
                models[name] = LogisticRegressionGD(step=step, max_iter=iterations).fit(data, job)

        threads = [threading.Thread(target=train, args=(n, 0.2 + 0.3 * i)) for i, n in enumerate(names)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return slaq, models


@pytest.mark.parametrize("policy", ["slaq", "fair"])
def test_three_jobs_share_two_cores_and_each_iteration_stays_within_its_grant(spark, classification, policy):
    x, y, data = classification
    tm = spark_plugin.telemetry(spark)
    mark = tm.mark()
    names = [f"{policy}-a", f"{policy}-b", f"{policy}-c"]
    slaq, models = _run_jobs(spark, data, policy, names)
    # Scheduling changes when iterations run, never what they compute.
    for i, name in enumerate(names):
        w, _, losses = reference_logistic_gd(x, y, 0.2 + 0.3 * i, 1e-4, ITERATIONS)
        np.testing.assert_allclose(models[name].coef_, w, rtol=1e-9, atol=1e-12)
        assert len(slaq.jobs[name].history) == ITERATIONS
    assert all(sum(r.cores.values()) <= 2 for r in slaq.timeline)
    assert any(0 in r.cores.values() for r in slaq.timeline), "three jobs on two cores: someone waited"
    tm.sync()
    tasks = tm.records(since=mark)["task"]
    groups = [g for g in pc.unique(tasks["jobGroup"]).to_pylist() if g and g.startswith(f"slaq-{policy}-")]
    assert len(groups) == 3 * ITERATIONS
    for group in groups:
        granted = int(group.rsplit("-c", 1)[1])
        mine = tasks.filter(pc.equal(tasks["jobGroup"], group))
        assert len(mine) <= granted, f"{group}: more tasks than granted cores"
        assert max_concurrent_tasks(mine) <= granted


def test_slaq_favours_the_job_with_more_to_gain_and_fair_rotates_so_none_starves(spark):
    # Decisions by hand (no epoch thread), one core between the jobs.
    slaq = SlaqScheduler(spark, cores=1, policy="slaq")
    fresh, late = slaq.job("fresh"), slaq.job("late")
    for k, loss in enumerate([10.0, 5.0, 3.0, 2.2, 1.8, 1.6, 1.5]):  # nearly converged
        late.report(k, loss, cpu_time_s=0.1)
    for k, loss in enumerate([10.0, 9.0, 8.1, 7.3, 6.6, 5.9]):  # early, still dropping fast
        fresh.report(k, loss, cpu_time_s=0.1)
    assert slaq.reallocate() == {"fresh": 1, "late": 0}
    late.finish()
    assert slaq.reallocate() == {"fresh": 1}, "a finished job leaves the allocation"

    fair = SlaqScheduler(spark, cores=1, policy="fair")
    for name in "xyz":
        fair.job(name)
    served = [next(n for n, c in fair.reallocate().items() if c) for _ in range(3)]
    assert sorted(served) == ["x", "y", "z"], "the least-served job gets the core next"


def test_bad_input_is_refused_with_the_fix(spark):
    with pytest.raises(ValueError, match="policy must be one of"):
        SlaqScheduler(spark, policy="fastest")
    with pytest.raises(ValueError, match="epoch_s"):
        SlaqScheduler(spark, epoch_s=0)
    slaq = SlaqScheduler(spark, cores=1, policy="slaq")
    first = slaq.job("one")
    with pytest.raises(ValueError, match="already registered"):
        slaq.job("one")
    with pytest.raises(ValueError, match="weight"):
        slaq.job("two", weight=0)
    second = slaq.job("three")
    slaq.reallocate()
    waiting = second if first.cores else first
    with pytest.raises(TimeoutError, match="no cores"):
        waiting.wait_for_cores(timeout=0.2)
    with pytest.raises(ValueError, match="finite"):
        first.report(0, float("nan"))
    slaq.stop()
    with pytest.raises(RuntimeError, match="stopped"):
        first.wait_for_cores(timeout=0.1)
    with pytest.raises(ValueError, match="non-empty 2-D"):
        TrainingData.from_numpy(spark.sparkContext, np.zeros(5))


# --- Unmodified pyspark.ml estimators under SLAQ ---

@pytest.fixture(scope="module")
def df(spark):
    x, y = make_classification(1200, 6, n_informative=4, n_classes=3, random_state=3)
    rows = [(Vectors.dense(r), float(label > 0)) for r, label in zip(x, y)]
    return spark.createDataFrame(rows, ["features", "label"]).repartition(4).cache()


def _objective_history(model) -> list:
    """The per-iteration objective an L-BFGS/OWL-QN model's training summary keeps, if it has one."""
    summary = model.summary if getattr(model, "hasSummary", False) else None
    return list(getattr(summary, "objectiveHistory", None) or [])


#: estimator, whether a fit of the coalesced input is the reference (random draws per partition),
#: and how two models are compared.
CASES = {
    "logistic-binomial": (lambda: LogisticRegression(maxIter=8, regParam=0.01), False, "coefficients"),
    "kmeans": (lambda: KMeans(k=4, maxIter=8, seed=1), True, "clusterCenters"),
    "gaussian-mixture": (lambda: GaussianMixture(k=2, maxIter=8, seed=1), True, "gaussiansDF"),
    "gbt": (lambda: GBTClassifier(maxIter=4, maxDepth=3, seed=1), False, "trees"),
}

#: One fit per path of SLAQ's enforcement: each way the JVM feed reads an iteration (breeze's line, ML's
#: Instrumentation, the boosting loop at DEBUG), each under an enforcement that acts on it, and between them
#: both enforcements over the input alone and with MLlib's own shuffles. The fits left out take a path one of
#: these takes:
#:
#: * LinearRegression, LinearSVC, MultilayerPerceptronClassifier and the multinomial LogisticRegression log
#:   breeze's "Val and Grad Norm" line, as logistic-binomial does, under either enforcement;
#:   the perceptron's reference on the coalesced input under "width" is kmeans-width's.
#: * kmeans-share: ML's Instrumentation line and its own shuffles in the grant's pool, as gaussian-mixture-share.
#: * gaussian-mixture-width: the same line, its reference on the coalesced input and its own shuffles at
#:   spark.default.parallelism, as kmeans-width.
#: * gbt-share: the boosting loop's line re-routed to each grant's pool, as in
#:   test_a_running_fit_is_resized_at_its_iteration_boundaries_and_still_equals_the_unscheduled_fit.
RUNS = [("logistic-binomial", "share"), ("logistic-binomial", "width"), ("kmeans", "width"),
        ("gaussian-mixture", "share"), ("gbt", "width")]


def _same(a, b, attribute, df=None):
    if attribute == "trees":  # same splits; thresholds are sums over rows, equal up to their order
        assert [t.numNodes for t in a.trees] == [t.numNodes for t in b.trees]
        np.testing.assert_allclose(a.treeWeights, b.treeWeights)
        ra, rb = (np.array([r[0].toArray() for r in m.transform(df).select("rawPrediction").collect()]) for m in (a, b))
        np.testing.assert_allclose(ra, rb, rtol=1e-9, atol=1e-12)
    elif attribute == "gaussiansDF":
        for ra, rb in zip(a.gaussiansDF.collect(), b.gaussiansDF.collect()):
            np.testing.assert_allclose(ra["mean"].toArray(), rb["mean"].toArray(), rtol=1e-6, atol=1e-9)
    elif attribute == "clusterCenters":
        np.testing.assert_allclose(np.array(a.clusterCenters()), np.array(b.clusterCenters()), rtol=1e-9, atol=1e-12)
    else:
        va, vb = getattr(a, attribute), getattr(b, attribute)
        np.testing.assert_allclose(va.toArray(), vb.toArray(), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("case, enforce", RUNS)
def test_the_model_is_the_unscheduled_fit_and_every_iteration_reaches_the_predictor(spark, df, case, enforce):
    make, by_partition, attribute = CASES[case]
    reference = make().fit(df.coalesce(2) if by_partition and enforce == "width" else df)
    tm = spark_plugin.telemetry(spark)
    mark = tm.mark()
    with SlaqScheduler(spark, cores=2, epoch_s=0.2) as scheduler, scheduler.job(case) as job:
        model = slaq.fit(make(), df, job, enforce=enforce)
    _same(model, reference, attribute, df)
    losses = list(job.history.losses_)
    assert len(losses) >= 3 and losses[-1] < losses[0]
    history = _objective_history(model)
    if history:  # the fed values are the ones the summary keeps, as logged (6 significant digits)
        np.testing.assert_allclose(losses, history[-len(losses):], rtol=1e-5)
    # Every Spark job of the fit ran in the job's group. "width": stages over the input ran on at most
    # the granted cores, one or more per iteration; the others are MLlib's own: its shuffles (the
    # per-iteration sums of KMeans and GaussianMixture, a tree's split search) and the driver-side
    # collections it parallelizes take spark.default.parallelism partitions, which SLAQ leaves.
    # "share": the input's own 4 partitions, in the pool of the grant.
    tm.sync()
    tasks = tm.records(since=mark)["task"]
    mine = tasks.filter(pc.starts_with(tasks["jobGroup"], f"slaq-{case}-"))
    assert len(mine) > 0
    granted = int(mine["jobGroup"][0].as_py().rsplit("-c", 1)[1])
    default_parallelism = spark.sparkContext.defaultParallelism
    sizes = [len(mine.filter(pc.equal(mine["stageId"], stage))) for stage in pc.unique(mine["stageId"]).to_pylist()]
    width = granted if enforce == "width" else df.rdd.getNumPartitions()
    assert granted == 2 < default_parallelism and all(n <= width or n == default_parallelism for n in sizes)
    assert sum(n <= width for n in sizes) >= len(losses)


def test_a_running_fit_is_resized_at_its_iteration_boundaries_and_still_equals_the_unscheduled_fit(spark, df):
    """"share": a second job halves the fit's grant mid-fit, its end gives it back; the fit's next Spark
    jobs run in the group (and pool) of each grant, and the model is the one an unscheduled fit gives.

    Boosting is deterministic; a long L-BFGS fit is not (its sums are merged in task completion order,
    so two unscheduled perceptron fits of 200 iterations differ too)."""
    import threading

    from tests.helpers import eventually

    make = lambda: GBTClassifier(maxIter=10, maxDepth=2, seed=2)  # noqa: E731  (one tree per iteration)
    reference = make().fit(df)
    tm = spark_plugin.telemetry(spark)
    mark = tm.mark()
    scheduler = SlaqScheduler(spark, cores=2, policy="fair")  # decides only when told: reallocate()
    job = scheduler.job("mlp")
    scheduler.reallocate()
    fitted = {}
    fitting = threading.Thread(target=lambda: fitted.update(model=slaq.fit(make(), df, job, enforce="share")))
    fitting.start()
    eventually(lambda: len(job.history) >= 2, timeout=120)
    other = scheduler.job("other")
    scheduler.reallocate()
    assert job.cores == 1
    eventually(lambda: 1 in job.runtime.overheads_, timeout=120)  # an iteration ran on one core
    other.finish()
    scheduler.reallocate()
    fitting.join(timeout=120)
    job.finish()
    _same(fitted["model"], reference, "trees", df)
    tm.sync()
    tasks = tm.records(since=mark)["task"]
    mine = tasks.filter(pc.starts_with(tasks["jobGroup"], "slaq-mlp-")).sort_by("stageId")
    grants = [int(g.rsplit("-c", 1)[1]) for g in mine["jobGroup"].to_pylist()]
    changes = [g for i, g in enumerate(grants) if i == 0 or g != grants[i - 1]]
    assert changes == [2, 1, 2], changes


def test_an_unknown_enforcement_is_refused_with_the_choices(spark, df):
    with SlaqScheduler(spark, cores=2) as scheduler, scheduler.job("typo") as job:
        with pytest.raises(ValueError, match=r"enforce must be one of \['width', 'share'\]. Got 'pool'"):
            slaq.fit(LogisticRegression(maxIter=2), df, job, enforce="pool")
