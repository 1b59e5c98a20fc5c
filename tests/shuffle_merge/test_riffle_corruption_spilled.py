"""Damaged merged files with every sub-block verified through a local file (verifyMaxBytes=0),
under ZSTD, Java serialization and IO encryption: results stay exact, nothing is recomputed."""

import pytest

import spark_plugin
from tests.shuffle_merge import merged_files
from tests.shuffle_merge.corruption import (RIFFLE_CONF, SHUFFLES, assert_read_from_originals_without_recomputation,
                                            read_again_after)

pytestmark = pytest.mark.spark

SPARK_SESSION = dict(
    master="local-cluster[2,1,1024]", features=["telemetry", "riffle"],
    conf={**RIFFLE_CONF, "spark.riffle.read.verifyMaxBytes": "0", "spark.io.compression.codec": "zstd",
          "spark.serializer": "org.apache.spark.serializer.JavaSerializer", "spark.io.encryption.enabled": "true"},
)


@pytest.fixture(scope="module")
def tm(spark):
    return spark_plugin.telemetry(spark)


#: Damaged in its ``last`` sub-block, in both shuffles: the sub-blocks before it are spilled, verified and used,
#: then its own copy fails its checksum and the rest is read from the originals. ``middle`` takes that same path
#: (``test_riffle_corruption`` damages it in memory); ``table`` fails the header, read before anything is spilled
#: and checked as ``test_riffle_corruption`` checks it whatever the codec.
@pytest.mark.parametrize("shuffle", SHUFFLES)
def test_a_damaged_byte_is_read_from_the_originals(spark, tm, session_dir, shuffle):
    records, _, _ = read_again_after(spark, tm, session_dir / "local", shuffle,
                                     lambda path: merged_files.damage(path, "last"))
    assert_read_from_originals_without_recomputation(records, some_merged_used=True)
    assert sum(r["spilledSubBlocks"] for r in records["shuffle_read"].to_pylist()) > 0
    assert not list((session_dir / "local").rglob("temp_local_*"))  # verified copies are deleted
