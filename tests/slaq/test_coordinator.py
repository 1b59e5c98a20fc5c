"""SLAQ across applications: the coordinator's protocol, and executor rescaling on a real standalone cluster."""

import numpy as np
import pytest
from sklearn.datasets import make_classification

from spark_plugin.slaq.coordinator import Coordinator, RemoteJob
from spark_plugin.slaq.trainers import LogisticRegressionGD, TrainingData
from spark_plugin.standalone import StandaloneCluster
from benchmarks.common import stop_and_clean
from tests.helpers import eventually


def test_remote_jobs_get_fair_shares_that_follow_arrivals_and_departures():
    with Coordinator(cores=4, policy="fair", epoch_s=0.1) as coordinator:
        with RemoteJob(coordinator.address, "a") as a:
            assert a.wait_for_cores(timeout=5) == 4
            with RemoteJob(coordinator.address, "b") as b:
                assert b.wait_for_cores(timeout=5) == 2
                assert a.wait_for_cores(timeout=5) == 2
                b.report(0, 1.0, cpu_time_s=0.1)
                with pytest.raises(RuntimeError, match="finite"):
                    b.report(1, float("nan"))
            # b left (its error ended its session): a gets everything back at a coming epoch
            eventually(lambda: a.wait_for_cores(timeout=5) == 4)
            assert [j.name for j in coordinator.scheduler.active()] == ["a"]


def test_a_duplicate_application_name_is_refused():
    with Coordinator(cores=2, epoch_s=0.1) as coordinator, RemoteJob(coordinator.address, "same"):
        with pytest.raises(RuntimeError, match="already registered"):
            RemoteJob(coordinator.address, "same")


@pytest.fixture(scope="module")
def standalone_app():
    """One application on a one-worker standalone cluster (two one-core executors at most).

    A killed executor leaves the driver's list once its disconnection is seen; Spark then waits
    ``spark.standalone.executorRemoveDelayOnDisconnection`` (5 s) for the master to say why, which
    every shrink would spend idle. Here the driver itself killed an idle executor, so the reason changes
    nothing: the wait is cut to 100 ms (measured: a shrink then takes 0.2 s instead of 5 s)."""
    import spark_plugin

    with StandaloneCluster(workers=1, cores=2, memory="2g") as cluster:
        spark = spark_plugin.session(cluster.url, features=[], app_name="slaq-coordinator",
                                     conf={"spark.executor.cores": "1", "spark.executor.memory": "512m",
                                           "spark.standalone.executorRemoveDelayOnDisconnection": "100ms"})
        app_id = spark.sparkContext.applicationId
        yield spark
        stop_and_clean(spark, app_id)


def test_an_application_resizes_its_executors_to_its_grant_and_trains_exactly(standalone_app):
    spark = standalone_app
    x, y = make_classification(400, 5, random_state=3)
    data = TrainingData.from_numpy(spark.sparkContext, x, y, partitions=4)
    with Coordinator(cores=2, policy="fair", epoch_s=0.1) as coordinator:
        app = RemoteJob(coordinator.address, "app", spark=spark)
        assert app.wait_for_cores(timeout=30) == 2
        assert len(app.scaler.executor_ids()) == 2
        other = RemoteJob(coordinator.address, "other")  # another application, scheduled with it
        eventually(lambda: app.wait_for_cores(timeout=30) == 1)
        assert len(app.scaler.executor_ids()) == 1, "the application gave one executor back"
        model = LogisticRegressionGD(step=0.5, max_iter=3).fit(data, app)  # half its cache went with the executor
        other.finish()
        eventually(lambda: app.wait_for_cores(timeout=30) == 2)
        assert len(app.scaler.executor_ids()) == 2
        app.finish()
    alone = LogisticRegressionGD(step=0.5, max_iter=3).fit(data)
    np.testing.assert_allclose(model.coef_, alone.coef_, rtol=1e-12)
    assert [(a, b) for a, b, _ in app.scaler.latencies][-2:] == [(2, 1), (1, 2)]
