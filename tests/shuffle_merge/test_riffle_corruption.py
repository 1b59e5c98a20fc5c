"""Damaged merged files never change a result or fail a job (LZ4, Kryo and UnsafeRow, in memory).

Each merged block is verified piece by piece before use: a damaged header, sub-block or checksum
is read from the original map outputs inside the same task, from the damaged sub-block on.
"""

import pytest

import spark_plugin
from tests.helpers import eventually
from tests.shuffle_merge import merged_files
from tests.shuffle_merge.corruption import (RIFFLE_CONF, assert_read_from_originals_without_recomputation,
                                            read_again_after)

pytestmark = pytest.mark.spark

SPARK_SESSION = dict(master="local-cluster[2,1,1024]", features=["telemetry", "riffle"], conf=RIFFLE_CONF)


@pytest.fixture(scope="module")
def tm(spark):
    return spark_plugin.telemetry(spark)


def assert_damage_read_from_originals(records: dict, position: str) -> None:
    """Sub-blocks before a damaged one were used from the merged block; nothing is read twice."""
    assert_read_from_originals_without_recomputation(records, some_merged_used=position in ("middle", "last"))
    assert sum(r["badMergedBlocks"] for r in records["shuffle_read"].to_pylist()) > 0


#: Where a byte is damaged, in which shuffle. A merged block is verified before any of its records is deserialized,
#: and a failed check falls back the same way whatever the serializer, so each position is damaged in one shuffle;
#: ``middle``, where one task deserializes records of the merged block and then of the originals, in both. Left out,
#: each covered by a case that takes the same path: ``checksum`` (the header's own checksum fails the comparison a
#: damaged ``table`` entry fails), ``last`` (as in ``middle``, the sub-blocks before it are used, then its checksum
#: fails; ``test_riffle_corruption_spilled`` damages it) and ``first`` of the RDD, which
#: ``test_later_reads_no_longer_use_a_merge_found_damaged`` damages and checks as here before it reads on.
DAMAGES = [("magic", "rdd"), ("table", "dataframe"), ("first", "dataframe"), ("middle", "rdd"), ("middle", "dataframe")]


@pytest.mark.parametrize("position, shuffle", DAMAGES)
def test_a_damaged_byte_is_read_from_the_originals(spark, tm, session_dir, shuffle, position):
    records, _, _ = read_again_after(spark, tm, session_dir / "local", shuffle,
                                     lambda path: merged_files.damage(path, position))
    assert_damage_read_from_originals(records, position)


def test_a_truncated_merged_file_is_read_from_the_originals(spark, tm, session_dir):
    """In one shuffle: the short file is found before any record is deserialized (by a local reader meeting its
    end, or a remote fetch failing, as the reducer of the last partition lands), whatever the serializer."""
    records, _, _ = read_again_after(spark, tm, session_dir / "local", "dataframe", merged_files.truncate)
    assert_read_from_originals_without_recomputation(records, some_merged_used=True)


def test_later_reads_no_longer_use_a_merge_found_damaged(spark, tm, session_dir):
    records, rdd, expected = read_again_after(spark, tm, session_dir / "local", "rdd",
                                              lambda path: merged_files.damage(path, "first"))
    assert_damage_read_from_originals(records, "first")

    def merged_blocks_read():
        mark = tm.mark()
        assert sorted(rdd.collect()) == expected
        reads = tm.records(since=mark)["shuffle_read"].to_pylist()
        return sum(r["mergedBlocks"] for r in reads) == 0 and sum(r["groupsUsed"] for r in reads) == 0

    eventually(merged_blocks_read)  # the driver stopped publishing them; executors drop cached plans


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

    records, _, _ = read_again_after(spark, tm, session_dir / "local", "dataframe", damage)
    tasks = records["task"].to_pylist()
    assert any(t["status"] != "SUCCESS" and "FetchFailed" in (t["failureReason"] or "") for t in tasks)
    assert any(t["taskType"] == "ShuffleMapTask" and t["stageAttempt"] >= 1 for t in tasks)
