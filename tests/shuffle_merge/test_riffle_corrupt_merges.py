"""A corrupt merged block is caught by its checksum before use, and the originals are read."""

import pytest

import spark_plugin
from tests.shuffle_merge.faults import FAULT_WORKLOADS, run_and_check

pytestmark = pytest.mark.spark

SPARK_SESSION = dict(
    master="local-cluster[2,1,1024]",
    features=["telemetry", "riffle"],
    conf={"spark.riffle.merge.fanIn": "3", "spark.riffle.bestEffort.fraction": "1.0",
          "spark.riffle.test.corruptMergedFiles": "true"},
)


@pytest.mark.parametrize("name", FAULT_WORKLOADS)
def test_corrupt_merged_blocks_fall_back_to_the_originals(spark, vanilla_results, name):
    records = run_and_check(spark, spark_plugin.telemetry(spark), vanilla_results, name)
    assert any(m["status"] == "committed" for m in records["merge"].to_pylist())
    reads = records["shuffle_read"].to_pylist()
    # The fault corrupts one partition of each merged file: its readers fall back, the others
    # keep using the merged blocks. (Each reader also checked every block was read exactly once.)
    assert sum(r["fallbacks"] for r in reads) > 0
    assert sum(r["coveredBlocks"] for r in reads) > 0
