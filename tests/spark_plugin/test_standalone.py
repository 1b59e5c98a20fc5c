"""The throwaway standalone cluster with one loopback host per worker, on which speculation can act."""

import time

import pytest

import spark_plugin
from spark_plugin.standalone import StandaloneCluster
from benchmarks.common import stop_and_clean
from tests.helpers import eventually
from tests.helpers import executor_ids

pytestmark = pytest.mark.spark


def test_each_worker_is_a_host_of_its_own_so_speculation_copies_a_straggler():
    # Spark never runs a speculative copy on the host of the original attempt: on one host it never acts.
    conf = {"spark.speculation": "true", "spark.speculation.multiplier": "1.5", "spark.speculation.quantile": "0.5",
            "spark.executor.cores": "1", "spark.executor.memory": "512m", "spark.cores.max": "2"}
    with StandaloneCluster(workers=2, cores=1, memory="1g", host_per_worker=True) as cluster:
        assert cluster.hosts == ["127.0.0.2", "127.0.0.3"]
        spark = spark_plugin.session(cluster.url, ["telemetry"], app_name="standalone-hosts", conf=conf)
        app_id = spark.sparkContext.applicationId
        try:
            eventually(lambda: len(executor_ids(spark)) == 2, timeout=60)

            def task(x):
                time.sleep(5 if x == 0 else 0.1)
                return x
            assert spark.sparkContext.parallelize(range(8), 8).map(task).sum() == 28
            tm = spark_plugin.telemetry(spark)
            hosts = {e["executorId"]: e["host"] for e in tm.executors().to_pylist() if e.get("host")}
            # the copy, killed when the original ends first, reports its end after the job
            copies = eventually(lambda: int(tm.records()["task"].to_pandas()["speculative"].sum()), timeout=30)
        finally:
            stop_and_clean(spark, app_id)
    assert sorted(hosts.values()) == cluster.hosts
    assert copies >= 1


def test_a_web_ui_port_taken_before_the_master_starts_is_followed_to_the_one_it_bound():
    """The port is free when chosen, but another server may take it first; Spark then binds the next one."""
    import http.server
    import threading

    squatter = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)  # serves HTML
    threading.Thread(target=squatter.serve_forever, daemon=True).start()
    cluster = StandaloneCluster(workers=1, cores=1, memory="1g")
    cluster.ui_port = squatter.server_address[1]
    try:
        with cluster:
            assert cluster.ui_port != squatter.server_address[1]
    finally:
        squatter.shutdown()
