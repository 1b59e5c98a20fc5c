"""A decommissioned executor that merged outputs: its files migrate, its merges are never used from elsewhere.

Spark moves a decommissioned executor's shuffle files to another executor and registers the map outputs there
under the same ids; the merges it wrote name it as their merger, so readers reject them and read the migrated
originals. Nothing is computed again.
"""

import os
import signal

import pytest

from tests.helpers import eventually, executor_ids
from tests.shuffle_merge.elastic import RIFFLE_CONF, read_twice

pytestmark = pytest.mark.spark

SPARK_SESSION = dict(
    master="local-cluster[2,1,1024]",
    features=["telemetry", "riffle"],
    conf={**RIFFLE_CONF, "spark.decommission.enabled": "true", "spark.storage.decommission.enabled": "true",
          "spark.storage.decommission.shuffleBlocks.enabled": "true",
          "spark.storage.decommission.rddBlocks.enabled": "false"},
)


def test_a_decommissioned_merger_migrates_its_outputs_and_its_merges_are_not_used_from_elsewhere(spark):
    def decommission_a_merger(tm, first):
        merger = next(m["executorId"] for m in first["merge"].to_pylist() if m["status"] == "committed")
        pid = next(e["pid"] for e in tm.executors().to_pylist() if e["executorId"] == merger and e["pid"])
        os.kill(pid, signal.SIGPWR)  # what a cluster manager sends before taking a node away
        eventually(lambda: merger not in executor_ids(spark), timeout=90)

    second = read_twice(spark, 89, decommission_a_merger)
    assert not [t for t in second["task"].to_pylist() if t["taskType"] == "ShuffleMapTask"]  # migrated, not lost
    reads = second["shuffle_read"].to_pylist()
    assert sum(r["groupsRejected"] for r in reads) > 0  # the merges naming the gone merger
    assert all(r["fallbacks"] == 0 for r in reads)
