"""Shuffle workloads whose results Riffle must leave exactly as vanilla Spark computes them.

Each takes a SparkSession and returns a plain Python value: sorted where Spark gives no order,
in Spark's order where the operator defines one (sortByKey, orderBy), and per partition for
repartition. Values avoid floating-point sums, whose last bits depend on the order blocks arrive.
Every map stage has 12 partitions, so several map outputs pile up on each executor.

``python -m tests.shuffle_merge.workloads OUT`` runs them all on plain Spark (no plugin) and
pickles the results to OUT: the oracle the Riffle tests compare with. The oracle runs them on
:data:`ORACLE_MAPS` map partitions: being sorted, ordered by Spark's operator or hash-partitioned
by key, no result depends on how the input is split, and vanilla Spark has no merging to exercise
(each Python task costs it a tenth of a second or more here).
"""

from __future__ import annotations

import pickle
import sys
from operator import add

MAPS = 12
ORACLE_MAPS = 2
WORKLOADS = {}


def workload(fn):
    WORKLOADS[fn.__name__] = fn
    return fn


def _sorted_rows(rows):
    """Rows as tuples, sorted with nulls first (Python cannot compare None with numbers)."""
    return sorted((tuple(r) for r in rows), key=lambda row: tuple((v is not None, v) for v in row))


def _pairs(n, keys):
    """Deterministic, skewed (key, value) pairs: key 0 gets about a tenth of all rows."""
    return [((i * 7919) % keys if i % 10 else 0, i) for i in range(n)]


@workload
def rdd_reduce_by_key(spark, maps=MAPS):
    rdd = spark.sparkContext.parallelize(_pairs(40_000, 997), maps)
    return sorted(rdd.reduceByKey(add, 5).collect())


@workload
def rdd_group_by_key(spark, maps=MAPS):
    rdd = spark.sparkContext.parallelize(_pairs(20_000, 301), maps)
    return sorted((k, sorted(v)) for k, v in rdd.groupByKey(4).collect())


@workload
def rdd_sort_by_key(spark, maps=MAPS):
    keys = [(i * 104_729) % 50_021 for i in range(50_021)]  # a permutation: unique keys
    rdd = spark.sparkContext.parallelize([(k, str(k)) for k in keys], maps)
    return rdd.sortByKey(ascending=False, numPartitions=4).collect()


@workload
def rdd_join(spark, maps=MAPS):
    sc = spark.sparkContext
    # PySpark joins by shuffling both sides in one map stage (a union, then groupByKey): half of the 12 each.
    left = sc.parallelize([(i % 500, i) for i in range(12_000)], max(1, maps // 2))
    right = sc.parallelize([(i % 700, -i) for i in range(3_000)], max(1, maps // 2))
    return sorted(left.join(right, 6).collect())


def _frame(spark, rows=60_000, maps=MAPS):
    from pyspark.sql import functions as F

    return (spark.range(0, rows, 1, numPartitions=maps)
            .withColumn("k", F.when(F.col("id") % 10 == 0, F.lit(None)).otherwise((F.col("id") * 31) % 211))
            .withColumn("tag", F.concat(F.lit("t"), (F.col("id") % 13).cast("string")))
            .withColumn("amount", (F.col("id") % 1000).cast("decimal(12,2)")))


@workload
def df_group_by(spark, maps=MAPS):
    from pyspark.sql import functions as F

    return _sorted_rows(_frame(spark, maps=maps).groupBy("k", "tag")
                        .agg(F.sum("amount").alias("s"), F.count("*").alias("n"), F.max("id").alias("m")).collect())


@workload
def df_join(spark, maps=MAPS):
    from pyspark.sql import functions as F

    left = _frame(spark, maps=maps).select("id", "k", "amount")
    # One deterministic row per key (dropDuplicates would keep whichever arrives first).
    right = _frame(spark, 20_000, maps).groupBy("k").agg(F.min("tag").alias("tag"))
    return _sorted_rows(left.join(right, "k").collect())


@workload
def df_order_by(spark, maps=MAPS):
    from pyspark.sql import functions as F

    # A full sort (range-partitioning shuffle); with a limit Spark would take a top-k without one.
    return [tuple(r) for r in _frame(spark, 30_000, maps).orderBy(F.col("amount").desc(), F.col("id")).collect()]


@workload
def df_repartition(spark, maps=MAPS):
    parts = _frame(spark, maps=maps).repartition(7, "k").rdd.glom().collect()
    return [_sorted_rows(part) for part in parts]


def main(out: str) -> None:
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("vanilla-oracle")
             .config("spark.sql.shuffle.partitions", "4").config("spark.ui.enabled", "false")
             .config("spark.pyspark.python", sys.executable).getOrCreate())
    try:
        results = {name: fn(spark, maps=ORACLE_MAPS) for name, fn in WORKLOADS.items()}
    finally:
        spark.stop()
    with open(out, "wb") as f:
        pickle.dump(results, f)


if __name__ == "__main__":
    main(sys.argv[1])
