"""Riffle on a real two-executor local-cluster: same results as vanilla Spark, fewer reads, safe faults.

Both executors run on one host, so they merge their outputs together (``merge.scope=host``): a merge runs on
one of the executors that wrote its inputs and reads its neighbour's files from its local directory. Checked
here: results equal vanilla Spark's for every workload, reads per reducer follow the host model (not the
per-executor one) and the Python policy model, the ``executor`` scope keeps executors apart, per-job settings,
AQE's map-range reads, lost, damaged and truncated merged files, and a neighbour lost after its outputs were
merged elsewhere. Merging is complete (best-effort fraction 1.0) so that read counts are exact; the best-effort
and injected-fault paths, whose switches are the application's, have modules of their own.

One application serves what used to be four modules (this one, the host-merge, corruption and map-range ones):
their settings differ only in what a job can set for itself (``job_settings``: the fan-in; the SQL session's
AQE settings), each costing seconds of JVM start-up. Host merges reading two neighbours' files take the same
path as one (every input carries its writer's directories), so two executors cover what four did. Tests about
the same shuffle share it (:func:`reduced`, :func:`merges_lost`): each Spark job costs seconds. Tests that make
Spark drop map outputs (fetch failures, a killed executor) come after those that read a shuffle again.
"""

import math
import os
import signal
from collections import Counter, defaultdict
from contextlib import contextmanager
from operator import add

import pyarrow.compute as pc
import pytest

import spark_plugin
from shuffle_merge import job_settings
from shuffle_merge.merge_policy import MapOutput, MergePolicy, plan_merges
from tests.helpers import eventually, executor_ids, recorded
from tests.shuffle_merge import merged_files
from tests.shuffle_merge.conftest import shuffle_files
from tests.shuffle_merge.corruption import (RIFFLE_CONF, assert_read_from_originals_without_recomputation,
                                            read_again_after)
from tests.shuffle_merge.elastic import PROMPT_REMOVAL
from tests.shuffle_merge.workloads import WORKLOADS

pytestmark = pytest.mark.spark

EXECUTORS = 2
FAN_IN = 3
SPARK_SESSION = dict(
    master=f"local-cluster[{EXECUTORS},1,1024]",
    features=["telemetry", "riffle"],
    conf={"spark.riffle.merge.fanIn": str(FAN_IN), "spark.riffle.bestEffort.fraction": "1.0",
          "spark.local.dir": "{session_dir}/local",
          # A lost remote file fails its fetch after Spark's I/O retries; keep their wait short here.
          "spark.shuffle.io.retryWait": "200ms", **PROMPT_REMOVAL},  # the executor killed last leaves at once
)
#: The fan-in of the corruption cases, the application's in their former module (``corruption.RIFFLE_CONF``):
#: eight map outputs in two merges of four, so that ``first``, ``middle`` and ``last`` are three sub-blocks.
CORRUPTION_FAN_IN = int(RIFFLE_CONF["spark.riffle.merge.fanIn"])


@pytest.fixture(scope="module")
def tm(spark):
    eventually(lambda: len(executor_ids(spark)) == EXECUTORS, timeout=90)
    return spark_plugin.telemetry(spark)


def map_tasks(records) -> list[dict]:
    return [t for t in records["task"].to_pylist() if t["taskType"] == "ShuffleMapTask"]


def writers(records) -> dict[int, str]:
    """The executor that wrote each map index (the successful attempt)."""
    return {t["partition"]: t["executorId"] for t in map_tasks(records) if t["status"] == "SUCCESS"}


def small_shuffle(sc, seed):
    return sc.parallelize(range(24_000), 16).map(lambda x: ((x * seed) % 211, x)).reduceByKey(add, 4)


def test_readme_documents_every_riffle_record_field(tm):
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "docs" / "telemetry.md").read_text()
    for rtype in ("merge", "shuffle_merge", "shuffle_read"):
        for field in tm.schemas_[rtype].names:
            assert f"`{field}`" in readme, f"docs/telemetry.md lacks {rtype}.{field}"


#: Every workload runs once under host-level merging, with the same checks. Together they take both shuffle paths
#: several times: PySpark's RDD operators all shuffle pickled pairs through one JVM path (``partitionBy``: a
#: PairwiseRDD keyed by partition ids computed in Python), DataFrames shuffle UnsafeRows through Spark SQL (read in
#: ranges of partitions that AQE coalesced, or a partition at a time).
@pytest.mark.parametrize("name", sorted(WORKLOADS))
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


@pytest.fixture(scope="module")
def reduced(spark, tm):
    """One merged shuffle read once, for the tests that check its records: (RDD, result, records). The RDD is
    kept, so its shuffle files stay until the session stops."""
    rdd = spark.sparkContext.parallelize(range(60_000), 12).map(lambda x: (x % 100, 1)).reduceByKey(add, 4)
    counts, records = recorded(tm, rdd.collect)
    return rdd, counts, records


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


def test_merges_span_executors_and_each_runs_on_one_of_its_writers(reduced):
    _, _, records = reduced
    wrote = writers(records)
    merges = records["merge"].to_pylist()
    assert any(len({wrote[i] for i in m["mapIndexes"]}) > 1 for m in merges)  # a neighbour's files were read
    for m in merges:
        assert m["executorId"] in {wrote[i] for i in m["mapIndexes"]}


def test_reads_per_reducer_follow_the_host_model_not_the_executor_one(spark, tm):
    # Every map output of the job in one merge, more than either executor's share, issued as the map stage ends:
    # readers wait for it however loaded the machine (the default deadline is one map stage's duration).
    with job_settings(spark, fan_in=16, max_wait_ratio=100):
        _, records = recorded(tm, lambda: small_shuffle(spark.sparkContext, 11).count())
    maps = map_tasks(records)
    per_host = sum(math.ceil(m / 16) for m in Counter(t["host"] for t in maps).values())
    per_executor = sum(math.ceil(m / 16) for m in Counter(t["executorId"] for t in maps).values())
    assert per_host == 1 < per_executor  # per executor: at least one block from each executor that ran maps
    for r in records["shuffle_read"].to_pylist():
        assert r["mergedBlocks"] + r["originalBlocks"] == per_host
        assert r["coveredBlocks"] + r["originalBlocks"] == r["expectedBlocks"] == len(maps)


def test_executor_scope_keeps_each_executor_apart(spark, tm):
    with job_settings(spark, scope="executor"):
        _, records = recorded(tm, lambda: small_shuffle(spark.sparkContext, 13).count())
    wrote = writers(records)
    merges = records["merge"].to_pylist()
    assert merges and all(m["scope"] == "executor" for m in merges)
    assert all({wrote[i] for i in m["mapIndexes"]} == {m["executorId"]} for m in merges)
    per_executor = sum(math.ceil(m / FAN_IN) for m in Counter(wrote.values()).values())
    assert all(r["mergedBlocks"] + r["originalBlocks"] == per_executor for r in records["shuffle_read"].to_pylist())


def test_per_job_settings_change_the_fan_in_or_switch_merging_off(spark, tm):
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


# --- Reduce tasks that read a map-index range (AQE's skew-join splits) use merges partly in their range. ---
# A skewed join makes AQE split the skewed partition by map ranges. A merge with at least two, and at least half,
# of its outputs in a task's range is fetched whole and its other sub-blocks skipped; the answer must be exact.

SKEW_ROWS, SKEW_MAPS, SKEW_KEYS = 60_000, 24, 97
#: The session settings of the skew join, applied around it only (the other DataFrame tests compare with vanilla
#: Spark's defaults), and its fan-in as a job setting.
SKEW_JOIN_SQL = {"spark.sql.adaptive.enabled": "true", "spark.sql.adaptive.skewJoin.enabled": "true",
                 "spark.sql.adaptive.forceOptimizeSkewedJoin": "true",
                 "spark.sql.adaptive.skewJoin.skewedPartitionFactor": "2",
                 "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes": "64k",
                 "spark.sql.adaptive.advisoryPartitionSizeInBytes": "96k",
                 "spark.sql.adaptive.coalescePartitions.enabled": "false",
                 "spark.sql.autoBroadcastJoinThreshold": "-1", "spark.sql.shuffle.partitions": "8"}


@contextmanager
def sql_settings(spark, settings: dict):
    """The SQL session's ``settings`` inside the block, the previous values (or none) restored after it."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def skewed_join(spark):
    """Six rows in ten have key 0; the join's answer per key: (name, rows, sum of ids)."""
    facts = spark.range(0, SKEW_ROWS, 1, SKEW_MAPS).selectExpr(
        f"CASE WHEN id % 10 < 6 THEN 0 ELSE id % {SKEW_KEYS} END AS k", "id", "sha2(CAST(id AS STRING), 256) AS pad")
    names = spark.range(0, SKEW_KEYS, 1, 4).selectExpr("id AS k", "concat('key-', id) AS name")
    rows = facts.join(names, "k").groupBy("name").agg({"*": "count", "id": "sum"}).collect()
    return sorted((r["name"], r["count(1)"], r["sum(id)"]) for r in rows)


def exact_skewed_join():
    count, total = defaultdict(int), defaultdict(int)
    for i in range(SKEW_ROWS):
        k = 0 if i % 10 < 6 else i % SKEW_KEYS
        count[k] += 1
        total[k] += i
    return sorted((f"key-{k}", count[k], total[k]) for k in count)


def ranged_reads(spark, tm, **settings):
    """The exact answer checked, the records of the reduce tasks that read a map range, and all reads."""
    mark = tm.mark()
    with sql_settings(spark, SKEW_JOIN_SQL), job_settings(spark, fan_in=4, **settings):
        assert skewed_join(spark) == exact_skewed_join()
    reads = tm.records(since=mark)["shuffle_read"].to_pylist()
    ranged = [r for r in reads if r["endMapIndex"] - r["startMapIndex"] < SKEW_MAPS and r["startMapIndex"] >= 0]
    assert ranged, "AQE split no partition by map ranges"
    return ranged, reads


@pytest.fixture(scope="module")
def partly_in_range(spark, tm):
    """The skew join with merges partly in a task's range used (the default): (ranged reads, all reads)."""
    return ranged_reads(spark, tm)


def test_skew_splits_read_merges_partly_in_their_range_and_stay_exact(partly_in_range):
    ranged, reads = partly_in_range
    assert sum(r["groupsPartial"] for r in ranged) > 0 and sum(r["mergedBlocks"] for r in ranged) > 0
    for r in reads:  # every block of the task's range read exactly once, through merges or originals
        assert r["coveredBlocks"] + r["originalBlocks"] == r["expectedBlocks"]
        assert r["fallbacks"] == 0


def test_a_job_can_pass_over_merges_partly_in_range_at_the_cost_of_more_reads(spark, tm, partly_in_range):
    partly, _ = partly_in_range
    whole_only, reads = ranged_reads(spark, tm, partial_merges=False)
    assert sum(r["groupsPartial"] for r in partly) > 0 and sum(r["groupsPartial"] for r in whole_only) == 0
    fetched = [sum(r["mergedBlocks"] + r["originalBlocks"] for r in rs) for rs in (partly, whole_only)]
    assert fetched[0] < fetched[1]
    for r in reads:
        assert r["coveredBlocks"] + r["originalBlocks"] == r["expectedBlocks"]


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


# --- Damaged merged files never change a result or fail a job (LZ4, Kryo and UnsafeRow, in memory). ---
# Each merged block is verified piece by piece before use: a damaged header, sub-block or checksum is read from
# the original map outputs inside the same task, from the damaged sub-block on. Each case reads a shuffle, damages
# the merged files it made, and reads it again (see ``corruption``).

def read_damaged(spark, tm, session_dir, shuffle, damage):
    """:func:`corruption.read_again_after`, with the corruption cases' fan-in."""
    with job_settings(spark, fan_in=CORRUPTION_FAN_IN):
        return read_again_after(spark, tm, session_dir / "local", shuffle, damage)


def assert_damage_read_from_originals(records: dict, position: str) -> None:
    """Sub-blocks before a damaged one were used from the merged block; nothing is read twice."""
    assert_read_from_originals_without_recomputation(records, some_merged_used=position in ("middle", "last"))
    assert sum(r["badMergedBlocks"] for r in records["shuffle_read"].to_pylist()) > 0


#: Where a byte is damaged, in which shuffle. A merged block is verified before any of its records is deserialized,
#: and a failed check falls back the same way whatever the serializer, so each position is damaged in one shuffle;
#: ``middle``, where one task deserializes records of the merged block and then of the originals, in both. Left out,
#: each covered by a case that takes the same path: ``checksum`` (the header's own checksum fails the comparison a
#: damaged ``table`` entry fails), ``last`` (as in ``middle``, the sub-blocks before it are used, then its checksum
#: fails; ``test_riffle_encrypted_zstd`` damages it) and ``first`` of the RDD, which
#: ``test_later_reads_no_longer_use_a_merge_found_damaged`` damages and checks as here before it reads on.
DAMAGES = [("magic", "rdd"), ("table", "dataframe"), ("first", "dataframe"), ("middle", "rdd"), ("middle", "dataframe")]


@pytest.mark.parametrize("position, shuffle", DAMAGES)
def test_a_damaged_byte_is_read_from_the_originals(spark, tm, session_dir, shuffle, position):
    records, _, _ = read_damaged(spark, tm, session_dir, shuffle, lambda path: merged_files.damage(path, position))
    assert_damage_read_from_originals(records, position)


def test_a_truncated_merged_file_is_read_from_the_originals(spark, tm, session_dir):
    """In one shuffle: the short file is found before any record is deserialized (by a local reader meeting its
    end, or a remote fetch failing, as the reducer of the last partition lands), whatever the serializer."""
    records, _, _ = read_damaged(spark, tm, session_dir, "dataframe", merged_files.truncate)
    assert_read_from_originals_without_recomputation(records, some_merged_used=True)


def test_later_reads_no_longer_use_a_merge_found_damaged(spark, tm, session_dir):
    records, rdd, expected = read_damaged(spark, tm, session_dir, "rdd",
                                          lambda path: merged_files.damage(path, "first"))
    assert_damage_read_from_originals(records, "first")

    def merged_blocks_read():
        mark = tm.mark()
        assert sorted(rdd.collect()) == expected
        reads = tm.records(since=mark)["shuffle_read"].to_pylist()
        return sum(r["mergedBlocks"] for r in reads) == 0 and sum(r["groupsUsed"] for r in reads) == 0

    eventually(merged_blocks_read)  # the driver stopped publishing them; executors drop cached plans


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


# From here on tests make Spark drop map outputs: a fetch failure drops every output of the executor it names.

def test_a_lost_original_file_takes_sparks_own_path_and_recomputes_that_map(spark, tm, session_dir, merges_lost):
    rdd, first, shuffle_id, _ = merges_lost  # its merged files are gone: readers must go to the originals...
    originals = sorted(p for p in shuffle_files(session_dir / "local", merged=False, shuffle_id=shuffle_id)
                       if p.suffix == ".data")
    originals[0].unlink()  # ...and one of those is gone too
    again, records = recorded(tm, lambda: sorted(rdd.collect()))
    assert again == first
    recomputed = [t for t in records["task"].to_pylist() if t["taskType"] == "ShuffleMapTask"]
    assert recomputed and all(t["stageAttempt"] >= 1 for t in recomputed)


def test_a_merged_copy_of_a_damaged_original_fails_the_task_and_spark_recomputes(spark, tm, session_dir):
    """Bytes that pass their checksum but do not deserialize came damaged from the map output itself.

    Once records of such a sub-block were used, the read cannot fall back without using some twice:
    the task fails with a fetch failure, as stock Spark's does for a damaged original block, and
    the map outputs are recomputed. The result stays exact.
    """
    def crc32c(data: bytes) -> int:
        crc = spark._jvm.java.util.zip.CRC32C()
        crc.update(bytearray(data))
        return crc.getValue()

    def damage(path):
        assert merged_files.largest_sub_block(path) > 3 * 32 * 1024  # several LZ4 blocks per sub-block
        merged_files.damage_and_reseal(path, 0.9, crc32c)

    records, _, _ = read_damaged(spark, tm, session_dir, "dataframe", damage)
    tasks = records["task"].to_pylist()
    assert any(t["status"] != "SUCCESS" and "FetchFailed" in (t["failureReason"] or "") for t in tasks)
    assert any(t["taskType"] == "ShuffleMapTask" and t["stageAttempt"] >= 1 for t in tasks)


#: Block-manager folders of executors this module killed: nothing of theirs can delete their files at stop.
KILLED_EXECUTOR_FOLDERS = set()


def test_a_neighbour_lost_after_its_outputs_were_merged_elsewhere_serves_nothing_stale(spark, tm, session_dir):
    """Its outputs are recomputed under new map ids, so the merges holding the old ones are rejected. Kills an
    executor: the last test before the session stops."""
    rdd = small_shuffle(spark.sparkContext, 17)
    first, records = recorded(tm, lambda: sorted(rdd.collect()))
    wrote = writers(records)
    host_merges = [m for m in records["merge"].to_pylist() if len({wrote[i] for i in m["mapIndexes"]}) > 1]
    assert host_merges
    victim = next(wrote[i] for i in host_merges[0]["mapIndexes"] if wrote[i] != host_merges[0]["executorId"])
    pid = next(e["pid"] for e in tm.executors().to_pylist() if e["executorId"] == victim and e["pid"])
    victim_maps = {t["taskId"] for t in map_tasks(records) if t["executorId"] == victim}
    KILLED_EXECUTOR_FOLDERS.update(p.parents[1] for p in shuffle_files(session_dir / "local", merged=False)
                                   if int(p.name.split("_")[2]) in victim_maps)
    assert KILLED_EXECUTOR_FOLDERS
    os.kill(pid, signal.SIGKILL)
    eventually(lambda: victim not in executor_ids(spark), timeout=60)
    second, records = recorded(tm, lambda: sorted(rdd.collect()))
    assert second == first
    recomputed = [t for t in map_tasks(records) if t["status"] == "SUCCESS"]
    assert len(recomputed) >= sum(ex == victim for ex in wrote.values())  # the victim's outputs, at least
    assert sum(r["groupsRejected"] for r in records["shuffle_read"].to_pylist()) > 0


def test_no_merged_files_remain_after_stop(spark, session_dir, reduced):
    """Runs last in this module: it stops the session. The files of an executor killed before are left where they
    are (on a real cluster its worker deletes the application's folders)."""
    local = session_dir / "local"

    def merged_files_of_live_executors():
        return [p for p in shuffle_files(local, merged=True) if p.parents[1] not in KILLED_EXECUTOR_FOLDERS]

    assert merged_files_of_live_executors()  # those of ``reduced`` at least, whose RDD is still referenced
    spark.stop()
    eventually(lambda: not merged_files_of_live_executors())
