"""``python -m benchmarks.rotary.automatic``: the 22 TPC-H queries through Rotary's automatic path.

Each of the harness's plain query files (``benchmarks/tpch/queries/qNN.sql``) is given to
``rotary.progressive_query`` as a user would give it, over temporary views of the TPC-H Parquet tables, in
one local application: whether it runs progressively (its fact table and batching key) or exactly (and
why), its time to the first and to the final snapshot, the plain query's time in the same application, and
whether the final answer equals the plain query's (the harness's own comparison). One JSON per run in
``benchmarks/results/rotary/<date>-<sha>.automatic-sf<SF>.json``. Timings here are single runs on a shared
machine: they show the order of magnitude, not a benchmark's medians.
"""

from __future__ import annotations

import argparse
import logging
import time

from benchmarks.common import result_path, run_metadata, write_json

TABLES = ("customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier")


def tpch_session(sf: float, master: str, app: str):
    """A local session with the TPC-H tables of scale factor ``sf`` as temporary views, and its conf."""
    from pyspark.sql import SparkSession

    from benchmarks.tpch.data import default_root, ensure_dataset

    data = ensure_dataset(default_root(), sf, 1)
    conf = {"spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false", "spark.driver.memory": "2g"}
    builder = SparkSession.builder.master(master).appName(app)
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    logging.getLogger("SQLQueryContextLogger").disabled = True  # pyspark would log a failed query as JSON too
    for table in TABLES:
        spark.read.parquet(str(data / table)).createOrReplaceTempView(table)
    return spark, conf


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.rotary.automatic", description=__doc__)
    parser.add_argument("--sf", type=float, default=0.1)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--queries", default="1-22", help="e.g. 1-22 or 3,5,17")
    args = parser.parse_args(argv)

    from benchmarks.tpch.oracle import compare
    from benchmarks.tpch.queries import order_columns, parse_selection, query_text
    from spark_plugin import rotary
    from spark_plugin.rotary.sqlquery import ExactQuery

    spark, conf = tpch_session(args.sf, args.master, "rotary-automatic")
    meta = run_metadata({**conf, "master": args.master})
    queries = []
    for q in parse_selection(args.queries):
        sql, record = query_text(q, args.sf), {"query": q}
        start = time.perf_counter()
        job = rotary.progressive_query(spark, sql, batches=args.batches)
        record["progressive"] = not isinstance(job, ExactQuery)
        if record["progressive"]:
            record.update(fact=job.derivation.fact_name.rsplit("/", 1)[-1],
                          key=[a.name for a in job.derivation.batch_key], exact_groups=job.spec.exact_groups)
        else:
            record["reason"] = job.reason
        snapshots = []
        for snapshot in job:
            snapshots.append(snapshot)
            if len(snapshots) == 1:
                record["first_s"] = round(time.perf_counter() - start, 2)
        record["final_s"] = round(time.perf_counter() - start, 2)
        record["notes"] = list(snapshots[-1].notes)
        start = time.perf_counter()
        plain = [tuple(row) for row in spark.sql(sql).collect()]
        record["plain_s"] = round(time.perf_counter() - start, 2)
        final = snapshots[-1].result
        try:
            compare(list(final.columns), list(final.itertuples(index=False, name=None)), plain, order_columns(sql))
            record["equal"] = True
        except AssertionError as e:
            record["equal"], record["difference"] = False, str(e)[:1000]
        print(record, flush=True)
        queries.append(record)
    spark.stop()
    summary = {"progressive": sum(r["progressive"] for r in queries), "queries": len(queries),
               "equal": sum(r["equal"] for r in queries)}
    path = write_json(result_path("rotary", f"automatic-sf{args.sf:g}.json", meta),
                      {"meta": meta, "sf": args.sf, "batches": args.batches, "summary": summary,
                       "queries": queries})
    print(f"{summary['progressive']} of {summary['queries']} progressive, {summary['equal']} equal to the plain "
          f"query; {path}")
    return 0 if summary["equal"] == summary["queries"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
