"""Jobs the advisor was not designed on, read from the event logs Spark writes with its default settings.

Seven jobs of the kinds users bring, none TPC-H nor a SLAQ trainer, over generated tables (a 3-million-row fact
table of orders and a 100,000-row dimension of customers, written once as Parquet): a join with a wide
aggregation, a high-cardinality aggregation, a global sort, a window (top three orders per customer), a distinct
count, a Python RDD reduce (Python workers in every task), and MLlib's K-Means. Every round starts one
application per executor count (the counts reversed every other round); each runs every job once as a warm-up
and then ``--repeat`` times in its job group, with ``spark.eventLog.enabled`` and nothing else about the event
log set: Spark 4's rolling, zstd-compressed folders, read back by :func:`spark_plugin.advisor.load_runs`.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.common import markdown_table, report_header, write_markdown
from spark_plugin.advisor import collect_runs_of
from spark_plugin.advisor.runs import no_runs_message
from spark_plugin.errors import SparkrmError

from . import cluster_of, median_run, round_order, where
from .analysis import (ADVICE_HEADERS, advice_columns, advice_sentence, error_columns, error_headers, refit_note,
                       summary_sentence)

FACT_ROWS = 3_000_000
CUSTOMERS = 100_000


def measure(args, folder: Path) -> dict:
    """``{job: [Run per count]}``, each the median over ``args.rounds`` rounds."""
    tables = folder / "tables"
    rounds = {}
    for r in range(args.rounds):
        for m in round_order(args.executors, r):
            logs = folder / f"round-{r}-executors-{m}"
            logs.mkdir(parents=True)
            _application(args, m, logs, tables)
            for job, found in collect_runs_of([logs], RUNNERS).items():  # the log is decoded once
                if not found.runs:
                    raise SparkrmError(no_runs_message(found, job))
                rounds.setdefault(job, {}).setdefault(m, []).extend(found.runs)
    return {job: [median_run(m, rs) for m, rs in sorted(by_count.items())] for job, by_count in rounds.items()}


def _application(args, executors: int, logs: Path, tables: Path) -> None:
    from pyspark.sql import SparkSession

    master, conf = cluster_of(args.master, executors)
    builder = SparkSession.builder.master(master).appName(f"advisor-jobs-{executors}")
    settings = {**conf, "spark.eventLog.enabled": "true", "spark.eventLog.dir": str(logs),
                "spark.driver.memory": "2g", "spark.ui.showConsoleProgress": "false",
                "spark.sql.shuffle.partitions": "16"}
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    try:
        if not tables.exists():
            _write_tables(spark, tables)
        fact, dims = spark.read.parquet(str(tables / "orders")), spark.read.parquet(str(tables / "customers"))
        for job, run in RUNNERS.items():
            spark.sparkContext.setJobGroup(f"warmup-{job}", "warm-up")
            run(spark, fact, dims)
            spark.sparkContext.setJobGroup(job, job)
            for _ in range(args.repeat):
                run(spark, fact, dims)
    finally:
        spark.stop()


def _write_tables(spark, tables: Path) -> None:
    from pyspark.sql import functions as F

    spark.sparkContext.setJobGroup("setup", "generate tables")
    orders = spark.range(FACT_ROWS, numPartitions=16).select(
        F.col("id").alias("order_id"), (F.hash("id") % CUSTOMERS).cast("int").alias("cust"),
        (F.abs(F.hash("id", F.lit(1))) % 100_000 / 100).alias("amount"), (F.col("id") % 730).cast("int").alias("day"),
        (F.abs(F.hash("id", F.lit(2))) % 50).cast("int").alias("product"))
    orders.write.parquet(str(tables / "orders"))
    spark.range(CUSTOMERS, numPartitions=4).select(
        F.col("id").cast("int").alias("cust"), (F.col("id") % 25).cast("int").alias("region"),
        (F.col("id") % 5).cast("int").alias("segment")).write.parquet(str(tables / "customers"))


def _join_agg(spark, fact, dims):
    from pyspark.sql import functions as F

    return (fact.join(dims, "cust").groupBy("region", "segment", (F.col("day") % 30).alias("month"))
            .agg(F.sum("amount"), F.avg("amount"), F.count("*"), F.max("amount"), F.countDistinct("product"))
            .collect())


def _wide_agg(spark, fact, dims):
    from pyspark.sql import functions as F

    return fact.groupBy("cust", "product").agg(F.sum("amount"), F.stddev("amount"), F.min("day")).count()


def _sort(spark, fact, dims):
    fact.orderBy(fact.amount.desc(), fact.order_id).write.format("noop").mode("overwrite").save()


def _window(spark, fact, dims):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    ranked = fact.withColumn("rank", F.row_number().over(Window.partitionBy("cust").orderBy(F.desc("amount"))))
    return ranked.where("rank <= 3").count()


def _distinct(spark, fact, dims):
    return fact.select("cust", "day").distinct().count()


def _rdd_reduce(spark, fact, dims):
    pairs = fact.select("product", "amount").rdd.map(lambda row: (row[0], row[1] * 1.1))
    return pairs.reduceByKey(lambda a, b: a + b).collect()


def _kmeans(spark, fact, dims):
    from pyspark.ml.clustering import KMeans
    from pyspark.ml.feature import VectorAssembler

    points = VectorAssembler(inputCols=["amount", "day", "product"], outputCol="features").transform(
        fact.sample(fraction=0.2, seed=7))
    return KMeans(k=20, maxIter=5, seed=1, initMode="random").fit(points).summary.trainingCost


RUNNERS = {"join_agg": _join_agg, "wide_agg": _wide_agg, "sort": _sort, "window": _window, "distinct": _distinct,
           "rdd_reduce": _rdd_reduce, "kmeans": _kmeans}


def write_report(json_path: Path) -> Path:
    data = json.loads(Path(json_path).read_text())
    conf, s = data["meta"]["conf"], data["summary"]
    counts, first = ", ".join(map(str, conf["executors"])), next(iter(data["queries"].values()))
    rows = [[job, " / ".join(f"{r['wall_s']:.1f}" for r in d["runs"]), *error_columns(d), *advice_columns(d),
             f"{sum(iv['covered'] for iv in d['intervals'])} of {len(d['intervals'])}"]
            for job, d in data["queries"].items()]
    md = report_header(data["meta"], "Scaling advisor on jobs it was not designed on") + [
        f"Seven jobs over generated tables ({FACT_ROWS:,} orders, {CUSTOMERS:,} customers), each run "
        f"{conf['repeat']} times (timed together, after a warm-up) at {counts} one-core executors ({where(conf)}), "
        f"{conf['rounds']} rounds, the counts' order reversed every other round; a count's time is the median over "
        "rounds. Runs read from the event logs Spark wrote with its defaults (rolling, zstd)."
        + refit_note(conf),
        "",
        f"**Held-out error** (median over jobs): {summary_sentence(s, 'holdout')}; extrapolated to the largest "
        f"count from the smaller: {summary_sentence(s, 'extrapolation')}. {advice_sentence(s, len(rows), 'jobs')}",
        "",
        _interval_sentence(s),
        "",
        markdown_table(["job", f"wall s at {counts}", *error_headers(first), *ADVICE_HEADERS, "intervals covering"],
                       rows),
        ""]
    return write_markdown(json_path, md)


def _interval_sentence(s: dict) -> str:
    if "interval_coverage" not in s:
        return "**90% intervals**: not checked (a run is held out from the others' fit: four or more counts needed)."
    return (f"**90% intervals**: each run held out and predicted, with its interval, from the others: "
            f"{100 * s['interval_coverage']:.0f}% of {s['interval_runs']} held-out runs covered "
            f"({100 * s['interval_coverage_inside']:.0f}% of those between the measured counts); median width "
            f"{100 * s['interval_width_median']:.0f}% (high over low). Goals: held-out error <= 10%, coverage >= 85%, "
            "advice within 10% of the fastest for >= 80% of jobs.")
