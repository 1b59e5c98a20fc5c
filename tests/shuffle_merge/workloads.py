"""Shuffle workloads whose results Riffle must leave exactly as vanilla Spark computes them.

Each takes a SparkSession and returns a plain Python value: sorted where Spark gives no order,
in Spark's order where the operator defines one (sortByKey, orderBy), and per partition for
repartition. Values avoid floating-point sums, whose last bits depend on the order blocks arrive.
Every map stage has 12 partitions, so several map outputs pile up on each executor.

``python -m tests.shuffle_merge.workloads OUT`` runs them all on plain Spark (no plugin) and
pickles the results to OUT: the oracle the Riffle tests compare with.
"""

from __future__ import annotations

import pickle
import sys
from operator import add

MAPS = 12
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
def rdd_reduce_by_key(spark):
    rdd = spark.sparkContext.parallelize(_pairs(40_000, 997), MAPS)
    return sorted(rdd.reduceByKey(add, 5).collect())


@workload
def rdd_group_by_key(spark):
    rdd = spark.sparkContext.parallelize(_pairs(20_000, 301), MAPS)
    return sorted((k, sorted(v)) for k, v in rdd.groupByKey(4).collect())


@workload
def rdd_sort_by_key(spark):
    keys = [(i * 104_729) % 50_021 for i in range(50_021)]  # a permutation: unique keys
    rdd = spark.sparkContext.parallelize([(k, str(k)) for k in keys], MAPS)
    return rdd.sortByKey(ascending=False, numPartitions=4).collect()


@workload
def rdd_join(spark):
    sc = spark.sparkContext
    left = sc.parallelize([(i % 500, i) for i in range(12_000)], MAPS)
    right = sc.parallelize([(i % 700, -i) for i in range(3_000)], MAPS)
    return sorted(left.join(right, 6).collect())


def _frame(spark, rows=60_000):
    from pyspark.sql import functions as F

    return (spark.range(0, rows, 1, numPartitions=MAPS)
            .withColumn("k", F.when(F.col("id") % 10 == 0, F.lit(None)).otherwise((F.col("id") * 31) % 211))
            .withColumn("tag", F.concat(F.lit("t"), (F.col("id") % 13).cast("string")))
            .withColumn("amount", (F.col("id") % 1000).cast("decimal(12,2)")))


@workload
def df_group_by(spark):
    from pyspark.sql import functions as F

    return _sorted_rows(_frame(spark).groupBy("k", "tag")
                        .agg(F.sum("amount").alias("s"), F.count("*").alias("n"), F.max("id").alias("m")).collect())


@workload
def df_join(spark):
    from pyspark.sql import functions as F

    left = _frame(spark).select("id", "k", "amount")
    # One deterministic row per key (dropDuplicates would keep whichever arrives first).
    right = _frame(spark, 20_000).groupBy("k").agg(F.min("tag").alias("tag"))
    return _sorted_rows(left.join(right, "k").collect())


@workload
def df_order_by(spark):
    from pyspark.sql import functions as F

    # A full sort (range-partitioning shuffle); with a limit Spark would take a top-k without one.
    return [tuple(r) for r in _frame(spark, 30_000).orderBy(F.col("amount").desc(), F.col("id")).collect()]


@workload
def df_repartition(spark):
    parts = _frame(spark).repartition(7, "k").rdd.glom().collect()
    return [_sorted_rows(part) for part in parts]


def main(out: str) -> None:
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("vanilla-oracle")
             .config("spark.sql.shuffle.partitions", "4").config("spark.ui.enabled", "false")
             .config("spark.pyspark.python", sys.executable).getOrCreate())
    try:
        results = {name: fn(spark) for name, fn in WORKLOADS.items()}
    finally:
        spark.stop()
    with open(out, "wb") as f:
        pickle.dump(results, f)


if __name__ == "__main__":
    main(sys.argv[1])
