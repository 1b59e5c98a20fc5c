"""Shared by the corruption modules: damage a shuffle's merged files between two reads of it.

A shuffle is read once (map stage, merges, first read), its new merged files are damaged on disk,
and the same RDD is read again: Spark skips the map stage and the second read meets the damage.
Results are compared with answers computed in plain Python, which equal vanilla Spark's.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from tests.shuffle_merge.conftest import shuffle_files

ROWS = 40_000
MAPS = 8
PARTITIONS = 4
#: Riffle settings of every corruption session: every executor's outputs merged, 4 per merge.
RIFFLE_CONF = {"spark.riffle.merge.fanIn": "4", "spark.riffle.bestEffort.fraction": "1.0",
               "spark.local.dir": "{session_dir}/local", "spark.shuffle.io.retryWait": "200ms"}


def rdd_shuffle(spark):
    """A PySpark RDD shuffle (pickled batches under Spark's serializer) and its exact result."""
    rdd = (spark.sparkContext.parallelize(range(ROWS), MAPS)
           .map(lambda i: (i % 101, f"{i}-{'x' * (i % 40)}")).partitionBy(PARTITIONS))
    return rdd, sorted((i % 101, f"{i}-{'x' * (i % 40)}") for i in range(ROWS))


def dataframe_shuffle(spark):
    """A DataFrame shuffle (UnsafeRow records), as an RDD so that a second action reuses it."""
    rows = (spark.range(0, ROWS, 1, MAPS)
            .selectExpr("id % 101 AS k", "id", "sha2(CAST(id AS STRING), 256) AS h")
            .repartition(PARTITIONS, "k").rdd.map(tuple))
    return rows, sorted((i % 101, i, hashlib.sha256(str(i).encode()).hexdigest()) for i in range(ROWS))


SHUFFLES = {"rdd": rdd_shuffle, "dataframe": dataframe_shuffle}


def merged_data_files(local: Path) -> set[Path]:
    return {p for p in shuffle_files(local, merged=True) if p.suffix == ".data"}


def read_again_after(spark, tm, local: Path, shuffle: str, damage):
    """Read ``shuffle``, apply ``damage`` to each merged data file it made, read it again.

    Returns the telemetry records of the second read, the RDD and its exact result, after checking
    both reads.
    """
    before = merged_data_files(local)
    rdd, expected = SHUFFLES[shuffle](spark)  # a DataFrame's map stage may run here already (AQE)
    assert sorted(rdd.collect()) == expected
    made = merged_data_files(local) - before
    assert made, "Riffle merged nothing, so there is nothing to damage"
    for path in made:
        damage(path)
    mark = tm.mark()
    assert sorted(rdd.collect()) == expected
    return tm.records(since=mark), rdd, expected


def assert_read_from_originals_without_recomputation(records: dict, *, some_merged_used: bool) -> None:
    """Every task succeeded, no map task ran again, and the damage was caught and counted."""
    tasks = records["task"].to_pylist()
    assert all(t["taskType"] == "ResultTask" and t["status"] == "SUCCESS" for t in tasks)
    reads = records["shuffle_read"].to_pylist()
    assert sum(r["fallbacks"] for r in reads) > 0
    assert sum(r["coveredBlocks"] for r in reads) > 0 if some_merged_used else all(
        r["coveredBlocks"] == 0 for r in reads)
