"""Riffle on a real two-executor local-cluster: same results as vanilla Spark, fewer reads, safe faults.

Both executors run on one host, so they merge their outputs together (``merge.scope=host``);
``test_riffle_host_merge`` covers the scopes and their fallbacks.

Merging is complete here (best-effort fraction 1.0) so that read counts are exact; the
best-effort and fault paths have modules of their own. Tests about the same shuffle share it
(:func:`reduced`, :func:`merges_lost`): each Spark job costs seconds.
"""

import math
from collections import Counter
from operator import add

import pyarrow.compute as pc
import pytest

import spark_plugin
from shuffle_merge.merge_policy import MapOutput, MergePolicy, plan_merges
from tests.helpers import eventually, recorded
from tests.shuffle_merge.conftest import shuffle_files
from tests.shuffle_merge.workloads import WORKLOADS

pytestmark = pytest.mark.spark

FAN_IN = 3
SPARK_SESSION = dict(
    master="local-cluster[2,1,1024]",
    features=["telemetry", "riffle"],
    conf={"spark.riffle.merge.fanIn": str(FAN_IN), "spark.riffle.bestEffort.fraction": "1.0",
          "spark.local.dir": "{session_dir}/local",
          # A lost remote file fails its fetch after Spark's I/O retries; keep their wait short here.
          "spark.shuffle.io.retryWait": "200ms"},
)


@pytest.fixture(scope="module")
def tm(spark):
    return spark_plugin.telemetry(spark)


#: Every workload runs once under host-level merging of one host's executors, with the same settings and checks:
#: these four here, the other four on four executors in ``test_riffle_host_merge``. Each half takes both shuffle
#: paths at least twice: PySpark's RDD operators all shuffle pickled pairs through one JVM path (``partitionBy``:
#: a PairwiseRDD keyed by partition ids computed in Python), DataFrames shuffle UnsafeRows through Spark SQL.
CLUSTER_WORKLOADS = ["df_group_by", "df_order_by", "rdd_group_by_key", "rdd_join"]


@pytest.fixture(scope="module")
def reduced(spark, tm):
    """One merged shuffle read once, for the tests that check its records: (RDD, result, records). The RDD is
    kept, so its shuffle files stay until the session stops."""
    rdd = spark.sparkContext.parallelize(range(60_000), 12).map(lambda x: (x % 100, 1)).reduceByKey(add, 4)
    counts, records = recorded(tm, rdd.collect)
    return rdd, counts, records


@pytest.mark.parametrize("name", CLUSTER_WORKLOADS)
def test_results_are_identical_to_vanilla_spark(spark, tm, vanilla_results, name):
    result, records = recorded(tm, lambda: WORKLOADS[name](spark))
    assert result == vanilla_results[name]
    reads = records["shuffle_read"]
    assert reads.num_rows > 0 and pc.sum(reads["mergedBlocks"]).as_py() > 0  # Riffle really served reads
    assert pc.sum(reads["fallbacks"]).as_py() == 0
    merges = records["merge"].to_pylist()
    assert merges and all(m["scope"] == "host" and m["status"] == "committed" for m in merges)
    tasks = records["task"]
    assert pc.all(pc.equal(tasks["status"], "SUCCESS")).as_py()
    assert pc.max(tasks["stageAttempt"]).as_py() == 0  # no stage was retried


def test_each_reducer_reads_one_block_per_merge_instead_of_one_per_map(reduced):
    _, counts, records = reduced
    assert dict(counts) == {k: 600 for k in range(100)}
    tasks = records["task"].to_pylist()
    maps = [t for t in tasks if t["taskType"] == "ShuffleMapTask"]
    per_host = Counter(t["host"] for t in maps)  # both executors share one host: they merge together
    expected = sum(math.ceil(m / FAN_IN) for m in per_host.values())
    assert expected < len(maps)
    for t in tasks:
        if t["taskType"] == "ResultTask":
            assert t["shuffleLocalBlocks"] + t["shuffleRemoteBlocks"] == expected
    for r in records["shuffle_read"].to_pylist():
        assert r["mergedBlocks"] + r["originalBlocks"] == expected
        assert r["coveredBlocks"] + r["originalBlocks"] == r["expectedBlocks"] == len(maps)  # exactly once


def test_merges_are_issued_by_the_policy_while_the_map_stage_runs(reduced):
    _, _, records = reduced
    map_stage = [s for s in records["stage"].to_pylist() if s["shuffleId"] is not None][0]
    merges = [m for m in records["merge"].to_pylist() if m["shuffleId"] == map_stage["shuffleId"]]
    assert all(m["status"] == "committed" for m in merges)
    assert any(m["issuedTime"] < map_stage["completionTime"] for m in merges)  # overlapped with maps
    # The JVM formed exactly the groups the Python model forms for the same arrival order.
    maps = [t for t in records["task"].to_pylist()
            if t["taskType"] == "ShuffleMapTask" and t["stageId"] == map_stage["stageId"]]
    outputs = [MapOutput(t["partition"], t["taskId"], t["executorId"], t["shuffleWriteBytes"], 4, host=t["host"])
               for t in maps]
    model = plan_merges(outputs, MergePolicy("fanin", fan_in=FAN_IN))
    assert sorted(m["mapIndexes"] for m in merges) == sorted([o.map_index for o in g] for g in model)
    (sealed,) = [s for s in records["shuffle_merge"].to_pylist() if s["shuffleId"] == map_stage["shuffleId"]]
    assert sealed["mergedOutputs"] == sum(len(g) for g in model) and sealed["sealReason"] == "all merges ended"


@pytest.fixture(scope="module")
def merges_lost(spark, tm, session_dir):
    """A shuffle read once, then again after its merged data files were deleted: (RDD, first result, shuffle id,
    records of the second read)."""
    rdd = spark.sparkContext.parallelize(range(30_000), 12).map(lambda x: (x % 97, x)).reduceByKey(add, 4)
    first, records = recorded(tm, lambda: sorted(rdd.collect()))
    shuffle_id = next(s["shuffleId"] for s in records["stage"].to_pylist() if s["shuffleId"] is not None)
    victims = [p for p in shuffle_files(session_dir / "local", merged=True, shuffle_id=shuffle_id)
               if p.suffix == ".data"]
    assert victims
    for path in victims:
        path.unlink()
    second, records = recorded(tm, lambda: sorted(rdd.collect()))
    assert second == first
    return rdd, first, shuffle_id, records


def test_a_lost_merged_file_is_read_from_the_originals_without_recomputation(merges_lost):
    _, _, _, records = merges_lost
    tasks = records["task"].to_pylist()
    assert all(t["taskType"] == "ResultTask" and t["status"] == "SUCCESS" for t in tasks)  # no map recomputed
    assert sum(r["fallbacks"] for r in records["shuffle_read"].to_pylist()) > 0


def test_a_lost_original_file_takes_sparks_own_path_and_recomputes_that_map(spark, tm, session_dir, merges_lost):
    rdd, first, shuffle_id, _ = merges_lost  # its merged files are gone: readers must go to the originals...
    originals = sorted(p for p in shuffle_files(session_dir / "local", merged=False, shuffle_id=shuffle_id)
                       if p.suffix == ".data")
    originals[0].unlink()  # ...and one of those is gone too
    again, records = recorded(tm, lambda: sorted(rdd.collect()))
    assert again == first
    recomputed = [t for t in records["task"].to_pylist() if t["taskType"] == "ShuffleMapTask"]
    assert recomputed and all(t["stageAttempt"] >= 1 for t in recomputed)


def test_unregistering_a_shuffle_deletes_its_merged_files(spark, tm, session_dir):
    sc = spark.sparkContext
    _, records = recorded(tm, lambda: sc.parallelize(range(12_000), 12).map(lambda x: (x % 7, 1))
                                      .reduceByKey(add, 2).count())
    shuffle_id = next(s["shuffleId"] for s in records["stage"].to_pylist() if s["shuffleId"] is not None)
    local = session_dir / "local"
    assert shuffle_files(local, merged=True, shuffle_id=shuffle_id)
    # What Spark's ContextCleaner does once the shuffle's RDD is garbage collected.
    sc._jsc.sc().cleaner().get().doCleanupShuffle(shuffle_id, True)
    eventually(lambda: not shuffle_files(local, merged=True, shuffle_id=shuffle_id))


def test_readme_documents_every_riffle_record_field(tm):
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "docs" / "telemetry.md").read_text()
    for rtype in ("merge", "shuffle_merge", "shuffle_read"):
        for field in tm.schemas_[rtype].names:
            assert f"`{field}`" in readme, f"docs/telemetry.md lacks {rtype}.{field}"


def test_per_job_settings_change_the_fan_in_or_switch_merging_off(spark, tm):
    from shuffle_merge import job_settings

    sc = spark.sparkContext
    with job_settings(spark, fan_in=2):
        _, records = recorded(tm, lambda: sc.parallelize(range(12_000), 12).map(lambda x: (x % 7, 1))
                                          .reduceByKey(add, 2).count())
    assert {m["fanIn"] for m in records["merge"].to_pylist()} == {2}
    with job_settings(spark, enabled=False):
        _, records = recorded(tm, lambda: sc.parallelize(range(12_000), 12).map(lambda x: (x % 7, 1))
                                          .reduceByKey(add, 2).count())
    assert records["merge"].num_rows == 0
    assert all(r["mergedBlocks"] == 0 for r in records["shuffle_read"].to_pylist())


def test_blocksize_policy_merges_small_outputs_and_skips_large_ones(spark, tm):
    from shuffle_merge import job_settings

    sc = spark.sparkContext
    # 12 outputs of ~6 KiB (1.5 KiB blocks): the 2 KiB target groups them two by two...
    with job_settings(spark, policy="blocksize", target_block_bytes="2k"):
        _, small = recorded(tm, lambda: sc.parallelize(range(12_000), 12).map(lambda x: (x % 4, x))
                                        .reduceByKey(add, 4).count())
    assert small["merge"].num_rows > 0
    assert all(m["fanIn"] >= 2 and m["status"] == "committed" for m in small["merge"].to_pylist())
    # ...while a 1-byte target is already met by every output: nothing is merged.
    with job_settings(spark, policy="blocksize", target_block_bytes=1):
        _, large = recorded(tm, lambda: sc.parallelize(range(12_000), 12).map(lambda x: (x % 4, x))
                                        .reduceByKey(add, 4).count())
    assert large["merge"].num_rows == 0
    assert all(r["mergedBlocks"] == 0 for r in large["shuffle_read"].to_pylist())


def test_no_merged_files_remain_after_stop(spark, session_dir, reduced):
    """Runs last in this module: it stops the session."""
    local = session_dir / "local"
    assert shuffle_files(local, merged=True)  # those of ``reduced`` at least, whose RDD is still referenced
    spark.stop()
    eventually(lambda: not shuffle_files(local, merged=True))
