"""Reduce tasks that read a map-index range (AQE's skew-join splits) use merges partly in their range.

A skewed join makes AQE split the skewed partition by map ranges. A merge with at least two, and at least half,
of its outputs in a task's range is fetched whole and its other sub-blocks skipped; the answer must be exact.
"""

from collections import defaultdict

import pytest

import spark_plugin
from shuffle_merge import job_settings

pytestmark = pytest.mark.spark

ROWS = 60_000
MAPS = 24
KEYS = 97
SPARK_SESSION = dict(
    master="local-cluster[2,1,1024]",
    features=["telemetry", "riffle"],
    conf={"spark.riffle.merge.fanIn": "4", "spark.riffle.bestEffort.fraction": "1.0",
          "spark.sql.adaptive.enabled": "true", "spark.sql.adaptive.skewJoin.enabled": "true",
          "spark.sql.adaptive.forceOptimizeSkewedJoin": "true",
          "spark.sql.adaptive.skewJoin.skewedPartitionFactor": "2",
          "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes": "64k",
          "spark.sql.adaptive.advisoryPartitionSizeInBytes": "96k",
          "spark.sql.adaptive.coalescePartitions.enabled": "false",
          "spark.sql.autoBroadcastJoinThreshold": "-1", "spark.sql.shuffle.partitions": "8"},
)


def skewed_join(spark):
    """Six rows in ten have key 0; the join's answer per key: (name, rows, sum of ids)."""
    facts = spark.range(0, ROWS, 1, MAPS).selectExpr(
        f"CASE WHEN id % 10 < 6 THEN 0 ELSE id % {KEYS} END AS k", "id", "sha2(CAST(id AS STRING), 256) AS pad")
    names = spark.range(0, KEYS, 1, 4).selectExpr("id AS k", "concat('key-', id) AS name")
    rows = facts.join(names, "k").groupBy("name").agg({"*": "count", "id": "sum"}).collect()
    return sorted((r["name"], r["count(1)"], r["sum(id)"]) for r in rows)


def exact_answer():
    count, total = defaultdict(int), defaultdict(int)
    for i in range(ROWS):
        k = 0 if i % 10 < 6 else i % KEYS
        count[k] += 1
        total[k] += i
    return sorted((f"key-{k}", count[k], total[k]) for k in count)


def test_skew_splits_read_merges_partly_in_their_range_and_stay_exact(spark):
    tm = spark_plugin.telemetry(spark)
    mark = tm.mark()
    assert skewed_join(spark) == exact_answer()
    records = tm.records(since=mark)
    reads = records["shuffle_read"].to_pylist()
    ranged = [r for r in reads if r["endMapIndex"] - r["startMapIndex"] < MAPS and r["startMapIndex"] >= 0]
    assert ranged, "AQE split no partition by map ranges"
    assert sum(r["groupsPartial"] for r in ranged) > 0 and sum(r["mergedBlocks"] for r in ranged) > 0
    for r in reads:  # every block of the task's range read exactly once, through merges or originals
        assert r["coveredBlocks"] + r["originalBlocks"] == r["expectedBlocks"]
        assert r["fallbacks"] == 0


def ranged_reads(spark, **settings):
    """The exact answer checked, the records of the reduce tasks that read a map range, and all reads."""
    tm = spark_plugin.telemetry(spark)
    mark = tm.mark()
    with job_settings(spark, **settings):
        assert skewed_join(spark) == exact_answer()
    reads = tm.records(since=mark)["shuffle_read"].to_pylist()
    ranged = [r for r in reads if r["endMapIndex"] - r["startMapIndex"] < MAPS and r["startMapIndex"] >= 0]
    assert ranged, "AQE split no partition by map ranges"
    return ranged, reads


def test_a_job_can_pass_over_merges_partly_in_range_at_the_cost_of_more_reads(spark):
    partly, _ = ranged_reads(spark)
    whole_only, reads = ranged_reads(spark, partial_merges=False)
    assert sum(r["groupsPartial"] for r in partly) > 0 and sum(r["groupsPartial"] for r in whole_only) == 0
    fetched = [sum(r["mergedBlocks"] + r["originalBlocks"] for r in rs) for rs in (partly, whole_only)]
    assert fetched[0] < fetched[1]
    for r in reads:
        assert r["coveredBlocks"] + r["originalBlocks"] == r["expectedBlocks"]
