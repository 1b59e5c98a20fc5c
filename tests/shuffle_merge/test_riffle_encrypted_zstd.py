"""Riffle under ZSTD, Java serialization and IO encryption, every merged sub-block verified through a local file
(``verifyMaxBytes=0``), with executor decommissioning on.

Damaged merged files: results stay exact, nothing is recomputed. A decommissioned executor that merged outputs:
its files migrate, its merges are never used from elsewhere. Both share one application (they used to have one
each): decommissioning acts only on the executor told to leave, last in this module, and the elastic settings it
needs beside these are a job's own (:func:`decommissioned`).
"""

import os
import signal

import pytest

import spark_plugin
from shuffle_merge import job_settings
from tests.helpers import eventually, executor_ids
from tests.shuffle_merge import merged_files
from tests.shuffle_merge.corruption import (RIFFLE_CONF, SHUFFLES, assert_read_from_originals_without_recomputation,
                                            read_again_after)
from tests.shuffle_merge.elastic import RIFFLE_CONF as ELASTIC_CONF, read_twice

pytestmark = pytest.mark.spark

SPARK_SESSION = dict(
    master="local-cluster[2,1,1024]", features=["telemetry", "riffle"],
    conf={**RIFFLE_CONF, "spark.riffle.read.verifyMaxBytes": "0", "spark.io.compression.codec": "zstd",
          "spark.serializer": "org.apache.spark.serializer.JavaSerializer", "spark.io.encryption.enabled": "true",
          "spark.decommission.enabled": "true", "spark.storage.decommission.enabled": "true",
          "spark.storage.decommission.shuffleBlocks.enabled": "true",
          "spark.storage.decommission.rddBlocks.enabled": "false",
          # The executor leaves after a migration pass that finds nothing left to move; Spark's default
          # waits 30 s between passes.
          "spark.storage.decommission.replicationReattemptInterval": "1s"},
)


@pytest.fixture(scope="module")
def tm(spark):
    return spark_plugin.telemetry(spark)


#: Damaged in its ``last`` sub-block, in both shuffles: the sub-blocks before it are spilled, verified and used,
#: then its own copy fails its checksum and the rest is read from the originals. ``middle`` takes that same path
#: (``test_riffle_cluster`` damages it in memory); ``table`` fails the header, read before anything is spilled
#: and checked as ``test_riffle_cluster`` checks it whatever the codec.
@pytest.mark.parametrize("shuffle", SHUFFLES)
def test_a_damaged_byte_is_read_from_the_originals(spark, tm, session_dir, shuffle):
    records, _, _ = read_again_after(spark, tm, session_dir / "local", shuffle,
                                     lambda path: merged_files.damage(path, "last"))
    assert_read_from_originals_without_recomputation(records, some_merged_used=True)
    assert sum(r["spilledSubBlocks"] for r in records["shuffle_read"].to_pylist()) > 0
    assert not list((session_dir / "local").rglob("temp_local_*"))  # verified copies are deleted


#: The elastic modules' merging, as job settings: every output merged three per merge, and reducers wait for every
#: merge however loaded the machine.
ELASTIC_JOB = dict(fan_in=int(ELASTIC_CONF["spark.riffle.merge.fanIn"]),
                   best_effort=float(ELASTIC_CONF["spark.riffle.bestEffort.fraction"]),
                   max_wait_ratio=float(ELASTIC_CONF["spark.riffle.bestEffort.maxWaitRatio"]),
                   best_effort_timeout=ELASTIC_CONF["spark.riffle.bestEffort.timeout"])


def test_a_decommissioned_merger_migrates_its_outputs_and_its_merges_are_not_used_from_elsewhere(spark):
    """Spark moves a decommissioned executor's shuffle files to another executor and registers the map outputs
    there under the same ids; the merges it wrote name it as their merger, so they are not read again. Nothing is
    computed again. The last test of this module: the executor leaves."""
    gone, kept = [], []  # the merges of the decommissioned executor, and the others

    def decommission_a_merger(tm, first):
        merges = first["merge"].to_pylist()
        merger = next(m["executorId"] for m in merges if m["status"] == "committed")
        for m in merges:
            (gone if m["executorId"] == merger else kept).append(m["groupId"])
        pid = next(e["pid"] for e in tm.executors().to_pylist() if e["executorId"] == merger and e["pid"])
        os.kill(pid, signal.SIGPWR)  # what a cluster manager sends before taking a node away
        eventually(lambda: merger not in executor_ids(spark), timeout=90)

    with job_settings(spark, **ELASTIC_JOB):
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
