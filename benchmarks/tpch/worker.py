"""One mode's Spark application: runs the queries the runner sends it.

The runner starts one worker process per mode (one SparkContext per process,
each on its own embedded cluster) and sends it one JSON request per line on
stdin; the worker answers on stdout with one line starting with ``TPCH ``
(Spark may print other lines). Keeping every mode's session alive lets the
runner interleave modes query by query, so that this machine's drift hits all
modes alike.

Request: ``{"query": 6, "sql": "...", "collect": true}`` or ``{"stop": true}``.
Answer: ``{"query": 6, "wall_s": 1.2, "harness_s": 0.01, "metrics": {...},
"columns": [...], "rows": [...]}``, or ``{"error": "..."}``. In a progressive mode
(``rotary``) the answer to a query it supports adds ``progressive``: ``first_s``,
``accuracy95_s``, ``final_s``, ``quarter_accuracy`` (see :mod:`.progressive`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
import traceback
from decimal import Decimal

from .data import table_paths
from .modes import MODES, PROGRESSIVE_MODES
from .queries import query_text

PREFIX = "TPCH "


def encode(value):
    """JSON for the values a TPC-H result holds (decimals and dates keep their type)."""
    if isinstance(value, Decimal):
        return {"$dec": str(value)}
    if isinstance(value, datetime.date):
        return {"$date": value.isoformat()}
    raise TypeError(f"Cannot encode {type(value).__name__} {value!r}")


def decode(obj):
    """Inverse of :func:`encode`, as a ``json.loads`` object hook."""
    if "$dec" in obj:
        return Decimal(obj["$dec"])
    if "$date" in obj:
        return datetime.date.fromisoformat(obj["$date"])
    return obj


def start_session(mode: str, master: str, conf: dict):
    """The mode's SparkSession: plain Spark for ``bare``, else sparkrm with the mode's features."""
    from pyspark.sql import SparkSession

    import spark_plugin

    features = MODES[mode]
    if features is None:
        builder = SparkSession.builder.master(master).appName(f"tpch-{mode}")
        for key, value in conf.items():
            builder.config(key, value)
        return builder.getOrCreate()
    return spark_plugin.session(master, features, app_name=f"tpch-{mode}", conf=conf)


def query_metrics(records: dict) -> dict:
    """Per-query shuffle and spill figures from the query's telemetry records.

    ``riffle_reads`` and ``riffle_vanilla_reads`` (modes running Riffle only) are the reads its
    reader issued and the ones stock Spark would have issued for the same blocks.
    """
    from spark_plugin import summarize_tasks

    s = summarize_tasks(records["task"])
    blocks = s["shuffleLocalBlocks"] + s["shuffleRemoteBlocks"]
    metrics = {"tasks": s["tasks"], "shuffle_write_bytes": s["shuffleWriteBytes"],
               "shuffle_local_blocks": s["shuffleLocalBlocks"], "shuffle_remote_blocks": s["shuffleRemoteBlocks"],
               "shuffle_read_requests": blocks,
               "shuffle_read_bytes": s["shuffleLocalBytes"] + s["shuffleRemoteBytes"],
               "shuffle_fetch_wait_ms": s["shuffleFetchWaitMs"],
               "spill_bytes": s["memorySpillBytes"] + s["diskSpillBytes"]}
    reads = records.get("shuffle_read")
    if reads is not None and reads.num_rows:
        rows = reads.to_pylist()
        metrics["riffle_reads"] = sum(r["mergedBlocks"] + r["originalBlocks"] for r in rows)
        metrics["riffle_vanilla_reads"] = sum(r["vanillaReads"] for r in rows)
    return metrics


def serve(spark, mode: str, inp, out, progressive=None) -> None:
    """Answer requests from ``inp`` until a stop request or end of input (progressively where
    ``progressive``, a :class:`~.progressive.ProgressiveAnswers`, is given)."""
    import spark_plugin

    tm = spark_plugin.telemetry(spark) if MODES[mode] is not None else None
    for line in inp:
        request = json.loads(line)
        if request.get("stop"):
            break
        try:
            answer = run_query(spark, tm, request, progressive)
        except Exception as e:  # report any query failure to the runner, which stops the run
            answer = {"query": request.get("query"), "error": f"{type(e).__name__}: {e}",
                      "traceback": traceback.format_exc()}
        out.write(PREFIX + json.dumps(answer, default=encode) + "\n")
        out.flush()


def run_query(spark, tm, request: dict, progressive=None) -> dict:
    """Run one query, time it, and gather its telemetry. Its jobs are in job group ``q<N>``, or ``q<N>-warmup``
    for a warm-up run (so that telemetry tells the timed runs apart, as the scaling advisor needs)."""
    query = request["query"]
    warmup = "-warmup" if request.get("warmup") else ""
    spark.sparkContext.setJobGroup(f"q{query}{warmup}", f"TPC-H Q{query}{' (warm-up)' if warmup else ''}")
    t0 = time.perf_counter()
    mark = tm.mark() if tm else 0
    t1 = time.perf_counter()
    if progressive is not None:
        columns, rows, extra = progressive.answer(query, request["sql"])
    else:
        df = spark.sql(request["sql"])
        columns, rows, extra = df.columns, df.collect(), {}
    t2 = time.perf_counter()
    metrics = query_metrics(tm.records(since=mark)) if tm else None
    t3 = time.perf_counter()
    answer = {"query": query, "wall_s": t2 - t1, "harness_s": (t1 - t0) + (t3 - t2), "metrics": metrics, **extra}
    if request.get("collect"):
        answer["columns"] = columns
        answer["rows"] = [tuple(r) for r in rows]
    return answer


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mode", required=True, choices=list(MODES))
    parser.add_argument("--master", required=True)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--queries", default="", help="the run's queries, comma-separated (a progressive mode "
                                                      "prepares the tables they read before it is ready)")
    parser.add_argument("--sf", type=float, default=1.0, help="the data set's scale factor (in its queries' text)")
    args = parser.parse_args(argv)
    conf = dict(item.split("=", 1) for item in args.conf)
    spark = start_session(args.mode, args.master, conf)
    for table, folder in table_paths(args.dataset).items():
        spark.read.parquet(str(folder)).createOrReplaceTempView(table)
    progressive = None
    if args.mode in PROGRESSIVE_MODES:
        from .progressive import ProgressiveAnswers

        progressive = ProgressiveAnswers(spark, args.dataset, [query_text(int(q), args.sf) for q in args.queries.split(",") if q])
    sys.stdout.write(PREFIX + json.dumps({"ready": True, "app_id": spark.sparkContext.applicationId}) + "\n")
    sys.stdout.flush()
    try:
        serve(spark, args.mode, sys.stdin, sys.stdout, progressive)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
