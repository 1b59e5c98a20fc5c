"""Unmodified pyspark.ml estimators under SLAQ: the model an unscheduled fit gives, the loss live.

One two-executor ``local-cluster`` in FAIR mode with telemetry, so the fits' tasks can be read
back. The input has 4 partitions and a lone job is granted both cores, so every ``"width"`` fit is
coalesced and every ``"share"`` fit runs on the input as it is.
"""

import numpy as np
import pyarrow.compute as pc
import pytest
from pyspark.ml.classification import GBTClassifier, LogisticRegression
from pyspark.ml.clustering import GaussianMixture, KMeans
from pyspark.ml.linalg import Vectors
from sklearn.datasets import make_classification

import spark_plugin
from spark_plugin import slaq
from spark_plugin.slaq.scheduler import SlaqScheduler

SPARK_SESSION = dict(master="local-cluster[2,1,1024]", features=["telemetry"], conf={"spark.scheduler.mode": "FAIR"})


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
    "logistic-binomial": (lambda: LogisticRegression(maxIter=15, regParam=0.01), False, "coefficients"),
    "kmeans": (lambda: KMeans(k=4, maxIter=15, seed=1), True, "clusterCenters"),
    "gaussian-mixture": (lambda: GaussianMixture(k=2, maxIter=15, seed=1), True, "gaussiansDF"),
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

    make = lambda: GBTClassifier(maxIter=16, maxDepth=2, seed=2)  # noqa: E731  (one tree per iteration)
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
