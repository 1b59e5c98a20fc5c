"""Damaged merged files without shuffle compression, with sub-blocks below and above
verifyMaxBytes (the RDD's verified in memory, the DataFrame's through a file)."""

import pytest

import spark_plugin
from tests.shuffle_merge import merged_files
from tests.shuffle_merge.corruption import (RIFFLE_CONF, assert_read_from_originals_without_recomputation,
                                            read_again_after)

pytestmark = pytest.mark.spark

SPARK_SESSION = dict(
    master="local-cluster[2,1,1024]", features=["telemetry", "riffle"],
    conf={**RIFFLE_CONF, "spark.riffle.read.verifyMaxBytes": "64k", "spark.shuffle.compress": "false"},
)


@pytest.fixture(scope="module")
def tm(spark):
    return spark_plugin.telemetry(spark)


#: Damaged in a ``middle`` sub-block: the ones before it are verified (in memory or through a file) and used, then
#: the rest is read from the originals. A damaged header ``checksum``, damaged here too before, fails the header's
#: check, made before any sub-block is verified or deserialized whatever the codec: ``test_riffle_cluster`` damages
#: the header (its ``table``) and ``test_riffle_encrypted_zstd`` spills under another codec.
@pytest.mark.parametrize(("shuffle", "spilled"), [("rdd", False), ("dataframe", True)])
def test_a_damaged_byte_is_read_from_the_originals(spark, tm, session_dir, shuffle, spilled):
    records, _, _ = read_again_after(spark, tm, session_dir / "local", shuffle,
                                     lambda path: merged_files.damage(path, "middle"))
    assert_read_from_originals_without_recomputation(records, some_merged_used=True)
    assert (sum(r["spilledSubBlocks"] for r in records["shuffle_read"].to_pylist()) > 0) == spilled
