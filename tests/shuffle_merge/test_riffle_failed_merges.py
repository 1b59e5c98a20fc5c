"""Failed merges and merged files lost before reading: originals are read, nothing is recomputed."""

import pytest

import spark_plugin
from tests.shuffle_merge.faults import FAULT_WORKLOADS, run_and_check

pytestmark = pytest.mark.spark

SPARK_SESSION = dict(
    master="local-cluster[2,1,1024]",
    features=["telemetry", "riffle"],
    conf={"spark.riffle.merge.fanIn": "3", "spark.riffle.bestEffort.fraction": "1.0",
          "spark.riffle.test.failMergeFraction": "0.5", "spark.riffle.test.loseMergedFiles": "true",
          "spark.shuffle.io.retryWait": "200ms"},  # lost remote files fail after Spark's I/O retries
)


@pytest.mark.parametrize("name", FAULT_WORKLOADS)
def test_failed_and_lost_merges_fall_back_to_the_originals(spark, vanilla_results, name):
    records = run_and_check(spark, spark_plugin.telemetry(spark), vanilla_results, name)
    merges = records["merge"].to_pylist()
    statuses = {m["status"] for m in merges}
    assert {"failed", "committed"} <= statuses
    assert all("injected merge failure" in m["reason"] for m in merges if m["status"] == "failed")
    reads = records["shuffle_read"].to_pylist()
    assert sum(r["fallbacks"] for r in reads) > 0  # committed merges were lost: fetches failed
    assert all(r["coveredBlocks"] == 0 for r in reads)  # every block came from an original file
