"""Measure what sparkrm telemetry costs a job: ``python -m benchmarks.telemetry``.

Three modes run the same 2,000-task job (1,990 map and 10 reduce tasks, a
DataFrame aggregation with AQE off so the task count is fixed) on a fresh
``local-cluster[2,1,1024]`` each:

* ``vanilla``: no jar, no plugin;
* ``plugin-off``: the plugin loaded with every feature off;
* ``telemetry``: telemetry on, written to a file as well.

Each mode runs in its own process (one SparkContext per process), and the
modes take turns round by round (A B C, B C A, ...), so that drift of this
shared machine hits all of them alike. Within a process ``--warmup`` jobs
(JIT compilation: the first jobs of a JVM run twice as long) are excluded,
then ``--jobs`` jobs are timed. The ratio of medians to vanilla, and
vanilla's own spread, say whether the difference is within noise.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import result_path, run_metadata, spread, write_json

from .report import write_report

MODES = ("vanilla", "plugin-off", "telemetry")
MASTER = "local-cluster[2,1,1024]"
REDUCERS = 10


def job(spark, tasks: int):
    """One job of exactly ``tasks`` tasks: ``tasks - 10`` maps feeding 10 reducers."""
    from pyspark.sql import functions as F

    spark.conf.set("spark.sql.shuffle.partitions", str(REDUCERS))
    return (spark.range(0, 2_000_000, 1, numPartitions=tasks - REDUCERS)
            .groupBy((F.col("id") % 1000).alias("k")).count().collect())


def worker(mode: str, warmup: int, jobs: int, tasks: int) -> dict:
    """Run in a child process: start the mode's session, warm up, time ``jobs`` jobs."""
    from pyspark.sql import SparkSession

    import spark_plugin

    conf = {"spark.sql.adaptive.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.pyspark.python": sys.executable}
    with tempfile.TemporaryDirectory() as tmp:
        if mode == "vanilla":
            builder = SparkSession.builder.master(MASTER)
            for k, v in conf.items():
                builder.config(k, v)
            spark = builder.getOrCreate()
        else:
            features = ["telemetry"] if mode == "telemetry" else []
            extra = {"spark.sparkrm.telemetry.dir": tmp} if mode == "telemetry" else {}
            spark = spark_plugin.session(MASTER, features, conf={**conf, **extra})
        for _ in range(warmup):
            job(spark, tasks)
        times, recorded, read_s, listener_cpu = [], [], [], []
        for _ in range(jobs):
            tm = spark_plugin.telemetry(spark) if mode == "telemetry" else None
            mark = tm.mark() if tm else 0
            cpu0 = listener_cpu_seconds(spark)
            start = time.perf_counter()
            job(spark, tasks)
            times.append(time.perf_counter() - start)
            if tm:
                tm.sync()
                listener_cpu.append(listener_cpu_seconds(spark) - cpu0)
                t0 = time.perf_counter()
                recorded.append(tm.tasks(since=mark).num_rows)
                read_s.append(time.perf_counter() - t0)
        spark.stop()
    return {"mode": mode, "job_seconds": times, "task_records": recorded, "read_seconds": read_s,
            "listener_cpu_seconds": listener_cpu}


def listener_cpu_seconds(spark) -> float:
    """CPU time used so far by the thread that delivers events to the telemetry listener.

    Spark runs each listener-bus queue on its own thread, ``spark-listener-group-<queue>``; the
    telemetry listener is alone on queue ``sparkrm``, so this is exactly what recording costs the
    driver, free of the run-to-run noise of wall-clock comparisons.
    """
    jvm = spark.sparkContext._jvm
    mx = jvm.java.lang.management.ManagementFactory.getThreadMXBean()
    for thread in jvm.java.lang.Thread.getAllStackTraces().keySet().toArray():
        if thread.getName() == "spark-listener-group-sparkrm":
            return mx.getThreadCpuTime(thread.getId()) / 1e9
    return 0.0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.telemetry", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="process launches per mode (default 3)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed jobs per process first (default 3)")
    parser.add_argument("--jobs", type=int, default=4, help="timed jobs per process (default 4)")
    parser.add_argument("--tasks", type=int, default=2000, help="tasks per job (default 2000)")
    parser.add_argument("--out", type=str, default=None, help="output folder (default benchmarks/results/telemetry)")
    parser.add_argument("--worker", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.jobs < 1 or args.warmup < 0 or args.tasks <= REDUCERS:
        parser.error(f"--rounds and --jobs must be >= 1, --warmup >= 0 and --tasks > {REDUCERS}")
    if args.worker:
        print(json.dumps(worker(args.worker, args.warmup, args.jobs, args.tasks)))
        return 0

    samples = {m: [] for m in MODES}
    rounds = []
    for r in range(args.rounds):
        order = MODES[r % len(MODES):] + MODES[:r % len(MODES)]
        this_round = {}
        for mode in order:
            cmd = [sys.executable, "-m", "benchmarks.telemetry", "--worker", mode, "--warmup",
                   str(args.warmup), "--jobs", str(args.jobs), "--tasks", str(args.tasks)]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            if mode == "telemetry" and any(n != args.tasks for n in result["task_records"]):
                raise RuntimeError(f"telemetry recorded {result['task_records']} tasks, expected {args.tasks}")
            samples[mode] += result["job_seconds"]
            this_round[mode] = result
            print(f"[round {r + 1}/{args.rounds}] {mode:<10} jobs: "
                  + ", ".join(f"{s:.2f}s" for s in result["job_seconds"]), file=sys.stderr)
        rounds.append(this_round)

    summary = {m: spread(v) for m, v in samples.items()}
    base = summary["vanilla"]["median"]
    ratios = {m: summary[m]["median"] / base for m in MODES}
    round_ratios = [spread_ratio(rd) for rd in rounds]
    meta = run_metadata({"master": MASTER, "rounds": args.rounds, "warmup": args.warmup, "jobs": args.jobs,
                         "tasks": args.tasks,
                         "reducers": REDUCERS, "spark.sql.adaptive.enabled": "false"})
    payload = {"meta": meta, "samples": samples, "summary": summary, "ratio_to_vanilla": ratios,
               "round_ratios": round_ratios, "rounds": rounds,
               "vanilla_noise": summary["vanilla"]["max"] / summary["vanilla"]["min"]}
    out_dir = Path(args.out) if args.out else None
    path = write_json(result_path("telemetry", "json", meta, out_dir), payload)
    md = write_report(path)
    print(f"telemetry/vanilla median job time: {ratios['telemetry']:.3f} "
          f"(plugin-off/vanilla {ratios['plugin-off']:.3f}; vanilla max/min {payload['vanilla_noise']:.3f})")
    print(f"wrote {path} and {md}")
    return 0


def spread_ratio(round_results: dict) -> dict:
    """Per-round median ratios to vanilla, so drift between rounds cancels."""
    import statistics

    base = statistics.median(round_results["vanilla"]["job_seconds"])
    return {m: statistics.median(r["job_seconds"]) / base for m, r in round_results.items()}
