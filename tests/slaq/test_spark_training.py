"""SLAQ on real Spark: trainers give the exact answers, the scheduler enforces its grants.

One two-executor ``local-cluster`` (two JVMs, one task slot each) in FAIR mode, with telemetry, so
a job's concurrent tasks can be read back from the executors' task records.
"""

import threading

import numpy as np
import pyarrow.compute as pc
import pytest
from scipy.special import expit
from sklearn.datasets import make_blobs, make_classification, make_regression
from sklearn.svm import LinearSVC

import spark_plugin
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

    model = LogisticRegressionGD(step=0.5, reg=1e-3, max_iter=15).fit(data, Fixed())
    w, b, losses = reference_logistic_gd(x, y, 0.5, 1e-3, 15)
    np.testing.assert_allclose(model.coef_, w, rtol=1e-9, atol=1e-12)
    assert model.intercept_ == pytest.approx(b, abs=1e-12)
    np.testing.assert_allclose(model.loss_curve_, losses, rtol=1e-9)


def test_kmeans_matches_lloyd_from_the_same_start(spark):
    x, _ = make_blobs(500, 3, centers=4, random_state=2)
    data = TrainingData.from_numpy(spark.sparkContext, x, partitions=3)
    model = KMeansLloyd(4, max_iter=8, seed=3).fit(data)
    centers = data.sample_rows(4, 3)  # the trainer's start
    for _ in range(8):
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
    model = LinearSVMGD(step=1.0, reg=1e-3, max_iter=30).fit(data)
    accuracy = np.mean(((x @ model.coef_ + model.intercept_) > 0) == (y == 1))
    assert accuracy >= LinearSVC(C=1.0).fit(x, y).score(x, y) - 0.03
    assert model.loss_curve_[-1] < 0.6 * model.loss_curve_[0]


def _run_jobs(spark, data, policy, names, iterations=12):
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
        w, _, losses = reference_logistic_gd(x, y, 0.2 + 0.3 * i, 1e-4, 12)
        np.testing.assert_allclose(models[name].coef_, w, rtol=1e-9, atol=1e-12)
        assert len(slaq.jobs[name].history) == 12
    assert all(sum(r.cores.values()) <= 2 for r in slaq.timeline)
    assert any(0 in r.cores.values() for r in slaq.timeline), "three jobs on two cores: someone waited"
    tm.sync()
    tasks = tm.records(since=mark)["task"]
    groups = [g for g in pc.unique(tasks["jobGroup"]).to_pylist() if g and g.startswith(f"slaq-{policy}-")]
    assert len(groups) == 36
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
