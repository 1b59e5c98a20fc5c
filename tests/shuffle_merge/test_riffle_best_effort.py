"""Best effort: reducers start once the deadline passes, with merged and unmerged outputs mixed.

Merges are slowed down so that some are still running when the map stage ends. This module also
reads merged blocks host-locally (another executor's files straight from disk).
"""

import pytest

import spark_plugin
from tests.shuffle_merge.faults import run_and_check

pytestmark = pytest.mark.spark

SPARK_SESSION = dict(
    master="local-cluster[2,1,1024]",
    features=["telemetry", "riffle"],
    conf={"spark.riffle.merge.fanIn": "2", "spark.riffle.bestEffort.fraction": "0.95",
          "spark.riffle.bestEffort.timeout": "400ms", "spark.riffle.test.mergeDelay": "1500ms",
          "spark.riffle.merger.threads": "1", "spark.shuffle.readHostLocalDisk": "true"},
)


def test_the_deadline_cancels_slow_merges_and_reducers_read_a_mix(spark, vanilla_results):
    records = run_and_check(spark, spark_plugin.telemetry(spark), vanilla_results, "rdd_reduce_by_key")
    (sealed,) = records["shuffle_merge"].to_pylist()
    assert sealed["sealReason"] == "best-effort timeout"
    assert sealed["mergedOutputs"] < sealed["outputs"]
    merges = records["merge"].to_pylist()
    assert any(m["status"] == "cancelled" for m in merges)
    committed = [m for m in merges if m["status"] == "committed"]
    merged_inputs = sum(m["fanIn"] for m in committed)
    # How readers wait for the seal, and how the driver keeps its deadline, is decided by clocks the tests
    # drive: test_plan_wait (a pushed seal ends a reader's wait at once) and test_scheduler (the deadline,
    # the pusher woken when the map stage ends, the seal pushed to every executor).
    for r in records["shuffle_read"].to_pylist():
        # One block per merge used plus one per unmerged output, each map output exactly once.
        assert r["mergedBlocks"] == r["groupsUsed"] == len(committed)
        assert r["originalBlocks"] == r["expectedBlocks"] - merged_inputs
        assert r["coveredBlocks"] == merged_inputs
