"""Executors of one host that cannot read each other's files: Riffle merges per executor there instead.

The fault key makes every host merge find its neighbours' directories unreadable, as it would where
executors of one host run in separate containers or as different users.
"""

import pytest

import spark_plugin
from tests.shuffle_merge.faults import FAULT_WORKLOADS, run_and_check

pytestmark = pytest.mark.spark

SPARK_SESSION = dict(
    master="local-cluster[2,1,1024]",
    features=["telemetry", "riffle"],
    # Reducers wait for every merge however loaded the machine: at the default deadline (one map stage's
    # duration) a host merge was cancelled before it met the fault in a clean-clone CI run of aa98543.
    conf={"spark.riffle.merge.fanIn": "3", "spark.riffle.bestEffort.fraction": "1.0",
          "spark.riffle.bestEffort.maxWaitRatio": "100", "spark.riffle.bestEffort.timeout": "60s",
          "spark.riffle.test.peerFilesUnreadable": "true"},
)


@pytest.mark.parametrize("name", FAULT_WORKLOADS)
def test_unreadable_neighbours_fall_back_to_per_executor_merges(spark, vanilla_results, name):
    tm = spark_plugin.telemetry(spark)
    records = run_and_check(spark, tm, vanilla_results, name)
    merges = records["merge"].to_pylist()
    # The first workload meets the fault; from then on the host merges per executor. A host merge whose
    # inputs all happen to be its merger's own outputs reads no neighbour, so it may commit (which merges
    # those are depends on which map tasks finish where and when): the fault is that every host merge that
    # fails fails for this reason, at least one does, and none is issued after the driver heard of it.
    host_merges = [m for m in tm.records()["merge"].to_pylist() if m["scope"] == "host"]
    seen = [(m["status"], m["reason"]) for m in host_merges]
    faulted = [m for m in host_merges if m["status"] == "failed"]
    assert faulted and all("neighbours' directories unreadable" in m["reason"] for m in faulted), seen
    assert all(m["status"] in ("failed", "committed") for m in host_merges), seen
    heard = min(m["endTime"] for m in faulted)
    assert all(m["issuedTime"] <= heard for m in host_merges), seen
    executor_merges = [m for m in merges if m["scope"] == "executor"]
    assert executor_merges and all(m["status"] == "committed" for m in executor_merges)
    reads = records["shuffle_read"].to_pylist()
    assert sum(r["mergedBlocks"] for r in reads) > 0 and sum(r["fallbacks"] for r in reads) == 0
