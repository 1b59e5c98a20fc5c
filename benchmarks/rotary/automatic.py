"""``python -m benchmarks.rotary.automatic``: the 22 TPC-H queries through Rotary's automatic path.

Each of the harness's plain query files (``benchmarks/tpch/queries/qNN.sql``) is given to
``rotary.progressive_query`` as a user would give it, over temporary views of the TPC-H Parquet tables, in
one local application: whether it runs progressively (its fact table and batching key) or exactly (and
why), its time to the first and to the final snapshot, the plain query's time in the same application, and
whether the final answer equals the plain query's (the harness's own comparison).

``--layouts DIR`` first prepares the fact tables the queries need (``rotary.layouts.prepare_for``: one
layout per table and key, timed apart as the one-off it is), so each step reads its batches' files only;
without it every step hashes the whole table. ``--rounds N`` runs each query N times progressively and
plainly, alternating which goes first, and reports medians and the median of the per-round ratios. One
JSON per run in ``benchmarks/results/rotary/<date>-<sha>.automatic-sf<SF>[-prepared].json``.
"""

from __future__ import annotations

import argparse
import logging
import time
from statistics import median

from benchmarks.common import result_path, run_metadata, write_json

TABLES = ("customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier")


def tpch_session(sf: float, master: str, app: str, driver_memory: str = "2g", shuffle_partitions: int = 4):
    """A local session with the TPC-H tables of scale factor ``sf`` as temporary views, and its conf."""
    from pyspark.sql import SparkSession

    from benchmarks.tpch.data import default_root, ensure_dataset

    data = ensure_dataset(default_root(), sf, 1)
    conf = {"spark.sql.shuffle.partitions": str(shuffle_partitions), "spark.ui.enabled": "false",
            "spark.driver.memory": driver_memory,
            "spark.ui.showConsoleProgress": "false"}
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
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--queries", default="1-22", help="e.g. 1-22 or 3,5,17")
    parser.add_argument("--layouts", help="prepare the fact tables the queries need in this folder first (timed "
                                          "apart, reused when already there) and read them; default: unprepared")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each query, progressive and plain side by "
                                                              "side, alternating which goes first (default 1)")
    parser.add_argument("--driver-memory", default="2g", help="the local application's memory (default 2g; "
                                                                 "SF 10 wants about 12g)")
    parser.add_argument("--shuffle-partitions", type=int, default=4,
                        help="spark.sql.shuffle.partitions for both paths (default 4; about 2 per GB of data)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")

    from benchmarks.tpch.queries import parse_selection, query_text
    from spark_plugin.rotary.layouts import prepare_for

    spark, conf = tpch_session(args.sf, args.master, "rotary-automatic", args.driver_memory,
                                args.shuffle_partitions)
    meta = run_metadata({**conf, "master": args.master})
    selection = parse_selection(args.queries)
    prepared = None
    if args.layouts:
        start = time.perf_counter()
        layouts = prepare_for(spark, [query_text(q, args.sf) for q in selection], args.batches, root=args.layouts)
        prepared = {"seconds": round(time.perf_counter() - start, 1),
                    "layouts": [f"{layout.source.rsplit('/', 1)[-1]} by {','.join(layout.key)}" for layout in layouts]}
        print(f"prepared in {prepared['seconds']} s: {', '.join(prepared['layouts'])}", flush=True)
    queries = []
    for q in selection:
        record = measure(spark, q, query_text(q, args.sf), args)
        print({k: v for k, v in record.items() if k != "rounds"}, flush=True)
        queries.append(record)
    spark.stop()
    progressive = [r for r in queries if r["progressive"]]
    summary = {"progressive": len(progressive), "queries": len(queries), "equal": sum(r["equal"] for r in queries),
               "rounds": args.rounds, "prepared": bool(args.layouts)}
    if progressive:
        summary.update(first_ratio_max=max(r["first_ratio"] for r in progressive),
                       final_ratio_max=max(r["final_ratio"] for r in progressive),
                       first_ratio_median=median([r["first_ratio"] for r in progressive]),
                       final_ratio_median=median([r["final_ratio"] for r in progressive]))
    suffix = "-prepared" if args.layouts else ""
    path = write_json(result_path("rotary", f"automatic-sf{args.sf:g}{suffix}.json", meta),
                      {"meta": meta, "sf": args.sf, "batches": args.batches, "prepared": prepared,
                       "summary": summary, "queries": queries})
    print(f"{summary['progressive']} of {summary['queries']} progressive, {summary['equal']} equal to the plain "
          f"query; {path}")
    return 0 if summary["equal"] == summary["queries"] else 1


def measure(spark, q: int, sql: str, args) -> dict:
    """Query ``q`` progressively and plainly, ``args.rounds`` times each, alternating which runs first:
    medians of the times to the first and final snapshots and of the plain query, their ratios, and whether
    the final answer equals the plain one (every round)."""
    from benchmarks.tpch.oracle import compare
    from benchmarks.tpch.queries import order_columns
    from spark_plugin import rotary
    from spark_plugin.rotary.sqlquery import ExactQuery

    record, rounds = {"query": q}, []
    for r in range(args.rounds):
        timing = {}
        for kind in (("progressive", "plain") if r % 2 == 0 else ("plain", "progressive")):
            start = time.perf_counter()
            if kind == "plain":
                plain = [tuple(row) for row in spark.sql(sql).collect()]
                timing["plain_s"] = time.perf_counter() - start
                continue
            job = rotary.progressive_query(spark, sql, batches=args.batches,
                                           layouts=args.layouts or False)
            snapshots = []
            for snapshot in job:
                snapshots.append(snapshot)
                if len(snapshots) == 1:
                    timing["first_s"] = time.perf_counter() - start
            timing["final_s"] = time.perf_counter() - start
        final = snapshots[-1].result
        try:
            compare(list(final.columns), list(final.itertuples(index=False, name=None)), plain, order_columns(sql))
        except AssertionError as e:
            record.setdefault("difference", str(e)[:1000])
        rounds.append({k: round(v, 3) for k, v in timing.items()})
    record["progressive"] = not isinstance(job, ExactQuery)
    if record["progressive"]:
        record.update(fact=job.source.derivation.fact_name.rsplit("/", 1)[-1],
                      key=[a.name for a in job.source.derivation.batch_key], exact_groups=job.spec.exact_groups,
                      layout=job.source.layout is not None)
    else:
        record["reason"] = job.reason
    record["notes"] = list(snapshots[-1].notes)
    record["equal"] = "difference" not in record
    for field in ("first_s", "final_s", "plain_s"):
        record[field] = round(median([t[field] for t in rounds]), 3)
    record["first_ratio"] = round(median([t["first_s"] / t["plain_s"] for t in rounds]), 3)
    record["final_ratio"] = round(median([t["final_s"] / t["plain_s"] for t in rounds]), 3)
    record["rounds"] = rounds
    return record


if __name__ == "__main__":
    raise SystemExit(main())
