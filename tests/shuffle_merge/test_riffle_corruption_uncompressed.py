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


@pytest.mark.parametrize(("shuffle", "spilled"), [("rdd", False), ("dataframe", True)])
@pytest.mark.parametrize("position", ["checksum", "middle"])
def test_a_damaged_byte_is_read_from_the_originals(spark, tm, session_dir, shuffle, spilled, position):
    records, _, _ = read_again_after(spark, tm, session_dir / "local", shuffle,
                                     lambda path: merged_files.damage(path, position))
    assert_read_from_originals_without_recomputation(records, some_merged_used=position == "middle")
    if position == "middle":
        assert (sum(r["spilledSubBlocks"] for r in records["shuffle_read"].to_pylist()) > 0) == spilled
