"""A decommissioned executor that merged outputs: its files migrate, its merges are never used from elsewhere.

Spark moves a decommissioned executor's shuffle files to another executor and registers the map outputs there
under the same ids; the merges it wrote name it as their merger, so they are not read again. Nothing is
computed again.
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
          "spark.storage.decommission.rddBlocks.enabled": "false",
          # The executor leaves after a migration pass that finds nothing left to move; Spark's default
          # waits 30 s between passes.
          "spark.storage.decommission.replicationReattemptInterval": "1s"},
)


def test_a_decommissioned_merger_migrates_its_outputs_and_its_merges_are_not_used_from_elsewhere(spark):
    gone, kept = [], []  # the merges of the decommissioned executor, and the others

    def decommission_a_merger(tm, first):
        merges = first["merge"].to_pylist()
        merger = next(m["executorId"] for m in merges if m["status"] == "committed")
        for m in merges:
            (gone if m["executorId"] == merger else kept).append(m["groupId"])
        pid = next(e["pid"] for e in tm.executors().to_pylist() if e["executorId"] == merger and e["pid"])
        os.kill(pid, signal.SIGPWR)  # what a cluster manager sends before taking a node away
        eventually(lambda: merger not in executor_ids(spark), timeout=90)

    second = read_twice(spark, 89, decommission_a_merger)
    assert not [t for t in second["task"].to_pylist() if t["taskType"] == "ShuffleMapTask"]  # migrated, not lost
    reads = second["shuffle_read"].to_pylist()
    assert gone and reads
    # Each read of the second job that completed read none of the gone merger's merges. Which of two ways
    # depends on when Spark refreshes an executor's copy of the map statuses (its epoch), not on Riffle: with
    # statuses naming the migrated outputs' new executor, a read rejects them all (no input is on their
    # merger); an attempt holding statuses cached before the migration fetches from the gone executor, fails
    # (so would vanilla Spark's read of the originals there), and withdraws them, so the retried read never
    # sees them (a clean-clone CI run took this way: "executor 1 ... is dead" on map index 11).
    seen = [(r["groupsUsed"], r["groupsRejected"], r["fallbacks"]) for r in reads]
    for used, rejected, fallbacks in seen:
        assert used <= len(kept) and fallbacks == 0, seen
        assert rejected == len(gone) or used + rejected == len(kept), seen
