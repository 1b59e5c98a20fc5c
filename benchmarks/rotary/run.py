"""Rotary-AQP benchmarks: ``python -m benchmarks.rotary {time-to-accuracy,workload}``.

* ``time-to-accuracy``: each supported query alone, progressively; the fraction of the exact
  query's time (the TPC-H harness SQL over the whole tables, same session) at which the true
  accuracy first reaches 95% and 99%.
* ``suspend``: Riveter's suspension and resumption (see :mod:`.suspend`).
* ``workload``: scaled Table 3.1 workloads (``conf/rotary/table-3.1.json``), one per seed, each run
  under each policy in turn in one application (policy order reversed on every other seed): attained
  jobs per class with the mean and 95% interval over seeds, false attainments, average waiting time,
  the scheduler's overhead and, under a memory budget (``--memory-mb``), the most estimated memory
  granted at once and how often jobs waited for memory. Before the policies run, each query of the workload runs alone
  once (after one warm-up batch of each): that fills Rotary's history store and gives each job
  its isolated time (to the moment its criterion is met alone), from which waiting time is
  measured as the thesis does. The JSON keeps those curves under ``alone``.

Each writes ``<date>-<sha>.<kind>.json`` plus Markdown and PNG under ``benchmarks/results/rotary/``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import (PROJECT_DIR, add_master_option, benchmark_session, labelled_names_problem, result_path,
                               run_metadata, write_json)

from .report import alone_time, write_time_to_accuracy_report, write_workload_report

DEFINITION = PROJECT_DIR / "conf" / "rotary" / "table-3.1.json"


def session(args, fair: bool, executor_cores: int = 1):
    conf = {"spark.driver.memory": "2g", "spark.ui.showConsoleProgress": "false"}
    if fair:
        conf["spark.scheduler.mode"] = "FAIR"
    return benchmark_session(args, ["telemetry"], conf=conf, executor_cores=executor_cores, app_name="rotary-benchmark")


def dataset(spark, args):
    from benchmarks.tpch.data import default_root, ensure_dataset
    from spark_plugin import rotary

    return rotary.prepare(spark, ensure_dataset(args.data or default_root(), args.sf, args.parts), args.batches)


def time_to_accuracy(args) -> Path:
    from tqdm import tqdm

    from benchmarks.tpch.queries import query_text
    from spark_plugin import rotary
    from spark_plugin.rotary.accuracy import true_accuracy

    spark = session(args, fair=False)
    try:
        data = dataset(spark, args)
        exact_session = spark.newSession()
        data.register_whole(exact_session)
        queries = args.queries or rotary.available()
        results = {}
        for q in tqdm(queries, desc="queries", file=sys.stderr):
            sql = query_text(q, args.sf)
            exact_session.sql(sql).collect()  # warm-up
            exact_times = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                exact_session.sql(sql).collect()
                exact_times.append(time.perf_counter() - start)
            exact_s = statistics.median(exact_times)
            job = rotary.ProgressiveQuery(spark, q, data.data, args.batches, data.seed)
            truth = job.exact()
            points = [(snap.elapsed_s, true_accuracy(snap.result, truth, job.spec), snap.fraction) for snap in job]
            results[q] = {"exact_s": exact_s, "exact_runs_s": exact_times,
                          "points": [{"elapsed_s": e, "true_accuracy": a, "fraction": f} for e, a, f in points],
                          "progressive_total_s": points[-1][0],
                          **{f"time_to_{int(level * 100)}": _first_time(points, level, exact_s) for level in (0.95, 0.99)}}
    finally:
        spark.stop()
    meta = run_metadata({"sf": args.sf, "parts": args.parts, "batches": args.batches, "repeat": args.repeat,
                         "executors": args.executors, "queries": queries, "master": args.master})
    path = write_json(result_path("rotary", "time-to-accuracy.json", meta, args.out), {"meta": meta, "queries": results})
    print(write_time_to_accuracy_report(path))
    return path


def _first_time(points, level: float, exact_s: float) -> dict:
    for elapsed, accuracy, fraction in points:
        if accuracy >= level:
            return {"seconds": elapsed, "of_exact": elapsed / exact_s, "fraction_of_data": fraction}
    return {"seconds": None, "of_exact": None, "fraction_of_data": None}


def workload(args) -> Path:
    import spark_plugin
    from spark_plugin import rotary
    from spark_plugin.rotary import policies
    from spark_plugin.rotary import workload as wl
    from spark_plugin.rotary.accuracy import Envelope
    from spark_plugin.rotary.arbiter import Arbiter
    from spark_plugin.rotary.estimators import History, PastRun, features

    definition = wl.load_definition(args.definition)
    workloads = {seed: wl.generate(definition, seed=seed, time_scale=args.time_scale, jobs=args.jobs,
                                   mix={args.mix: 1.0} if args.mix else None) for seed in args.seeds}
    spark = session(args, fair=True, executor_cores=args.executor_cores)
    runs = {}
    try:
        data = dataset(spark, args)
        history, alone, exact = History(), {}, {}
        queries = sorted({j.query for jobs in workloads.values() for j in jobs})
        for q in queries:  # one batch of each first, so no timed run below pays the JVM's warm-up
            rotary.ProgressiveQuery(spark, q, data.data, args.batches, data.seed).step()
        for q in queries:  # each query alone once: history and isolated times
            job = rotary.ProgressiveQuery(spark, q, data.data, args.batches, data.seed, growth=1)
            envelope = Envelope(job.spec, args.window)
            alone[q] = [(snap.elapsed_s, envelope.add(snap.result)) for snap in job]
            history.add(PastRun(features(job.spec, args.batches), [list(p) for p in alone[q]]))
        memory = args.memory_mb * 1e6 if args.memory_mb else None
        telemetry = spark_plugin.telemetry(spark)
        for i, (seed, jobs) in enumerate(workloads.items()):
            runs[seed] = {}
            for position, name in enumerate(args.policies if i % 2 == 0 else args.policies[::-1]):  # alternated
                policy = policies.make(name.partition("@")[0])
                with tempfile.TemporaryDirectory(prefix="rotary-checkpoints-") as checkpoints:
                    arbiter = Arbiter(spark, data, policy, batches=args.batches, cores=args.cores, memory=memory,
                                      epoch_s=args.epoch, window=args.window, checkpoint_dir=checkpoints,
                                      history=history if policy.uses_history else None, exact_answers=exact,
                                      progress=lambda e, n=f"seed {seed} {name}": print(
                                          f"[{n}] t={e['time_s']:.0f}s active={e['active']} pending={e['pending']} "
                                          f"done={e['done']}", file=sys.stderr))
                    mark = telemetry.mark()
                    start = time.perf_counter()
                    records = arbiter.run(jobs)
                    wall = time.perf_counter() - start
                for r in records:
                    r["isolated_s"] = alone_time(alone[r["query"]], r["threshold"])
                    r["waiting_vs_alone_s"] = max(0.0, r["turnaround_s"] - r["isolated_s"])
                runs[seed][name] = {"records": records, "wall_s": wall, "overhead_s": arbiter.overhead_s,
                                    "peak_memory_bytes": arbiter.peak_memory, "position": position,
                                    "epochs_over_grant": _epochs_over_grant(telemetry, mark)}
    finally:
        spark.stop()
    meta = run_metadata({"sf": args.sf, "parts": args.parts, "batches": args.batches, "jobs": args.jobs or
                         definition["jobs"], "seeds": args.seeds, "time_scale": args.time_scale,
                         "mix": args.mix or "table-3.1", "cores": args.cores, "memory_mb": args.memory_mb,
                         "executor_cores": args.executor_cores, "epoch_s": args.epoch, "window": args.window,
                         "executors": args.executors, "policies": args.policies, "master": args.master})
    payload = {"meta": meta, "workloads": {seed: [j.__dict__ for j in jobs] for seed, jobs in workloads.items()},
               "alone": alone, "runs": runs}
    budget = f"-{args.memory_mb:g}mb" if args.memory_mb else ""
    name = f"workload-{args.mix or 'table-3.1'}-x{args.time_scale:g}-{args.cores}cores{budget}.json"
    path = write_json(result_path("rotary", name, meta, args.out), payload)
    print(write_workload_report(path))
    return path


def _epochs_over_grant(telemetry, since: int) -> list:
    """The job epochs (job groups ``rotary-<job>-<epoch>-c<cores>``) that ran more tasks at once than their
    cores, from the task records (see :func:`spark_plugin.telemetry_reader.max_concurrent_tasks`)."""
    import pyarrow.compute as pc

    from spark_plugin.telemetry_reader import max_concurrent_tasks

    telemetry.sync()
    tasks = telemetry.records(since=since)["task"]
    over = []
    for group in pc.unique(tasks["jobGroup"]).to_pylist():
        if group and group.startswith("rotary-"):
            cores = int(group.rsplit("-c", 1)[1])
            peak = max_concurrent_tasks(tasks.filter(pc.equal(tasks["jobGroup"], group)), on_executor=True)
            if peak > cores:
                over.append({"group": group, "cores": cores, "peak": peak})
    return over


def main(argv=None) -> int:
    from spark_plugin.rotary import policies

    parser = argparse.ArgumentParser(prog="python -m benchmarks.rotary", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="kind", required=True)
    for name, helptext in (("time-to-accuracy", "each query alone: time to 95%%/99%% true accuracy"),
                           ("workload", "Table 3.1 workload under each policy"),
                           ("suspend", "Riveter: suspension lag, state size, resume, cost model")):
        p = sub.add_parser(name, help=helptext)
        if name == "suspend":
            p.add_argument("--sfs", type=lambda s: [float(x) for x in s.split(",")], default=[0.1, 1.0],
                           help="comma-separated scale factors (default 0.1,1)")
        else:
            p.add_argument("--sf", type=float, default=0.1, help="TPC-H scale factor (default 0.1)")
        p.add_argument("--parts", type=int, default=4, help="Parquet files per table (default 4)")
        p.add_argument("--batches", type=int, default=20, help="batches per fact table (default 20)")
        p.add_argument("--executors", type=int, default=2, help="executor JVMs, 1 core each (default 2)")
        add_master_option(p)
        p.add_argument("--data", type=Path, default=None, help="TPC-H data root (default ~/.cache/sparkrm/tpch)")
        p.add_argument("--out", type=Path, default=None, help="output folder (default benchmarks/results/rotary)")
    sus = sub.choices["suspend"]
    sus.add_argument("--growth", type=float, default=4.0, help="chunk growth of the progressive queries (default 4)")
    sus.add_argument("--at", type=float, default=0.5, help="request the suspension at this fraction of T (0.5)")
    for p in (sus, sub.choices["time-to-accuracy"]):
        p.add_argument("--queries", type=lambda s: [int(x) for x in s.split(",")], default=None,
                       help="comma-separated query numbers (default: every supported one)")
    tta = sub.choices["time-to-accuracy"]
    tta.add_argument("--repeat", type=int, default=3, help="timed runs of each exact query (default 3)")
    w = sub.choices["workload"]
    w.add_argument("--definition", type=Path, default=DEFINITION, help="workload definition JSON")
    w.add_argument("--jobs", type=int, default=None, help="number of jobs (default: the definition's 30)")
    w.add_argument("--seeds", type=lambda s: [int(x) for x in s.split(",")], default=[0],
                   help="comma-separated workload seeds (default 0); policy order is reversed on every other seed")
    w.add_argument("--time-scale", type=float, default=0.05, help="multiplies deadlines and inter-arrivals")
    w.add_argument("--mix", choices=["light", "medium", "heavy"], default=None, help="a skewed workload of one class")
    w.add_argument("--policies", type=lambda s: s.split(","), default=list(policies.POLICIES),
                   help=f"comma-separated (default: {','.join(policies.POLICIES)}); POLICY@LABEL runs "
                        "a policy again under another name (the A/A comparison)")
    w.add_argument("--cores", type=int, default=2, help="cores arbitrated (default 2)")
    w.add_argument("--executor-cores", type=int, default=1,
                   help="task slots per executor (default 1; more than the machine's cores oversubscribes it)")
    w.add_argument("--memory-mb", type=float, default=None,
                   help="memory budget of the jobs granted at once, in MB of estimated batch input (default: none)")
    w.add_argument("--epoch", type=float, default=2.0, help="base epoch in seconds (default 2)")
    w.add_argument("--window", type=int, default=3, help="envelope window (default 3)")
    args = parser.parse_args(argv)
    if min(args.sfs if args.kind == "suspend" else [args.sf]) <= 0 or args.batches < 2 or args.executors < 1:
        parser.error("--sf must be > 0, --batches >= 2, --executors >= 1")
    if args.kind == "suspend":
        from .suspend import suspend

        suspend(args)
    elif args.kind == "workload":
        problem = labelled_names_problem(args.policies, policies.POLICIES, "--policies")
        if problem:
            parser.error(problem)
        workload(args)
    else:
        time_to_accuracy(args)
    return 0
