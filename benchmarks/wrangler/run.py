"""Wrangler's benchmark: ``python -m benchmarks.wrangler [--jobs N] [--rounds R] [--out DIR]``.

Noisy neighbours on a standalone cluster of E one-core workers, each bound to a loopback address of its
own (``--cluster hosts``, the default; Spark runs a speculative copy only on another host than the
original, so on one host speculation never acts) or on ``local-cluster[E,1,1024]`` (``--cluster local``):
every executor is a node of its own (its process tree in its own CPU cgroup) and is starved of CPU in
bursts at seeded random times, each node with its own pattern (:mod:`.noise`): the victim in long deep
bursts, the others in short shallow ones (``--noisy-nodes victim`` starves the victim alone). With
``--cluster emulated`` the executors run on the emulated hosts of :mod:`benchmarks.cluster` (a network
namespace and cgroups each) and the noise is CPU, disk and memory hogs inside the hosts' own groups
(:mod:`.hogs`, ``--victim-levels``, ``--other-levels``), as another tenant of the same container would be.
A two-stage job runs repeatedly. First a warm-up application records telemetry (node samples, tasks) and a
:class:`StragglerPredictor` is trained on it (two thirds train, one third calibrates). Then, in the same
run, each arm is a fresh application with the same burst schedules: default Spark, speculation tuned as
users tune it (multiplier 1.5, quantile 0.75), Wrangler (p = 0.7), Wrangler with that speculation, and
Wrangler without the confidence threshold (p = 0). Arms are interleaved over rounds; ratios to speculation
are taken per round and given with a 95% t-interval over rounds. The held-out prediction quality is
measured on the default arm's tasks (no holds bias their labels). Writes ``<date>-<sha>.json`` plus a
Markdown/PNG report to ``benchmarks/results/wrangler/`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks.common import interval, result_path, run_metadata, write_json
from spark_plugin.standalone import StandaloneCluster

from .noise import CpuGroup, HostNoise, NoisyNeighbour, burst_schedule, unavailable_reason
from .report import write_report
from .workload import arm_metrics, multi_stage_job, percentiles

#: Speculation as users tune it for short stages: copy a task 1.5x slower than the median once 75% are done.
SPECULATION = {"spark.speculation": "true", "spark.speculation.multiplier": "1.5",
               "spark.speculation.quantile": "0.75"}
#: Speculation switched on at Spark 4's defaults (multiplier 3, quantile 0.9), written out for older Sparks.
SPECULATION_SPARK4 = {"spark.speculation": "true", "spark.speculation.multiplier": "3",
                      "spark.speculation.quantile": "0.9"}
ARMS = {
    "default": ({}, None),
    "speculation": (SPECULATION, None),
    "speculation-spark4": (SPECULATION_SPARK4, None),
    "wrangler": ({}, 0.7),
    "wrangler+speculation": (SPECULATION, 0.7),
    "wrangler+speculation-spark4": (SPECULATION_SPARK4, 0.7),
    "wrangler-no-threshold": ({}, 0.0),
    "wrangler-wait": ({"spark.wrangler.hold.waitAware": "true"}, 0.7),
}
#: The baselines every arm is compared with (those of them that ran).
BASELINES = ("default", "speculation", "speculation-spark4")


def run_app(args, master: str, name: str, extra: dict, model: Path | None, p: float | None, jobs: int,
            work_dir: Path, cluster: dict | None = None) -> dict:
    """One application: start, wait for executors, one unmeasured job, then ``jobs`` jobs under noise.

    ``cluster`` is the emulated cluster's state (``--cluster emulated``): noise then runs as hogs inside
    each host's groups; without it, each executor's process tree is starved through a CPU group of its own.
    """
    import spark_plugin
    from spark_plugin.wrangler import running
    from benchmarks.common import stop_and_clean  # ends the driver JVM too, so no arm inherits another's conf

    conf = {"spark.wrangler.interval": f"{args.interval_ms}ms", "spark.wrangler.hold.maxDuration": args.hold_cap,
            "spark.sparkrm.telemetry.dir": str(work_dir / name), "spark.ui.showConsoleProgress": "false",
            "spark.default.parallelism": str(args.partitions), **extra}
    if args.hold_share is not None:
        conf["spark.wrangler.hold.maxShare"] = str(args.hold_share)
    if model is None:  # node samples only: the loop has no model and trains none
        conf.update({"spark.wrangler.mode": "hint", "spark.wrangler.train.warmup": "24h"})
    else:
        conf.update({"spark.wrangler.model.path": str(model), "spark.wrangler.confidence": str(p)})
    if master.startswith("spark://"):
        conf.update({"spark.executor.cores": "1", "spark.executor.memory": "1g",
                     "spark.cores.max": str(args.executors)})
    if cluster is not None:
        from benchmarks.cluster.emulated import session_conf

        conf.update(session_conf(cluster))
    spark = spark_plugin.session(master, ["wrangler"],
                                 app_name=f"wrangler-bench-{name}", conf=conf)
    app_id = spark.sparkContext.applicationId
    try:
        tm = spark_plugin.telemetry(spark)
        pids = _executor_pids(tm, args)
        expected = sum(range(args.partitions * 2000))
        assert multi_stage_job(spark, args.partitions, args.work) == expected
        mark = tm.mark()
        started = time.time()
        with contextlib.ExitStack() as stack:
            noise = (_starve_executors(args, stack, pids) if cluster is None
                     else _hogs_in_hosts(args, stack, tm, cluster))
            for neighbour in noise.values():
                neighbour.start()
            for _ in range(jobs):
                assert multi_stage_job(spark, args.partitions, args.work) == expected
        wall = time.time() - started
        bursts = {eid: n.bursts_ for eid, n in noise.items()}
        kinds = {eid: n.kinds_ for eid, n in noise.items() if hasattr(n, "kinds_")}
        time.sleep(2)  # a speculative copy killed when its original won reports its end after the job
        records = tm.records(since=mark)
        loop = running(spark)
        predict_s = list(loop.predict_seconds_) if loop else []
        decisions = dict(Counter(f"{d['why']}:{d['action']}" for d in loop.decisions_)) if loop else {}
        if loop:
            loop.stop()
        return {"arm": name, "wall_s": wall, "noise": "hogs" if cluster else noise[args.victim].method_,
                "bursts": bursts, "burst_kinds": kinds, "predict_seconds": predict_s, "decisions": decisions,
                "records": records, **arm_metrics(records, victim=args.victim, bursts=bursts)}
    finally:
        stop_and_clean(spark, app_id)


def _starve_executors(args, stack, pids: dict) -> dict:
    """Each noisy executor's tree in a CPU group of its own, starved in its bursts; the quiet ones capped."""
    noise = {}
    for eid, pid in sorted(pids.items()):
        group = f"sparkrm-wrangler-node-{eid}"
        pattern = node_pattern(args, eid)
        if pattern is None:  # a quiet node: its own CPU quota only
            if args.node_share is not None:
                stack.enter_context(CpuGroup(pid, group, args.node_share))
            continue
        schedule, share = pattern
        noise[eid] = stack.enter_context(NoisyNeighbour(pid, schedule, share=share, normal_share=args.node_share,
                                                        name=group))
    return noise


def _hogs_in_hosts(args, stack, tm, cluster: dict) -> dict:
    """Hogs in the groups of each noisy executor's host (one executor per host), keyed by executor id.

    The pattern follows the executor id, as in the other modes, so that a node keeps its pattern (and its
    per-node model) in every application, wherever the master placed it.
    """
    host_of = {e["executorId"]: e["host"] for e in tm.executors().to_pylist() if e["event"] == "added"}
    by_address = {h["address"]: h for h in cluster["hosts"]}
    noise = {}
    for eid, address in sorted(host_of.items()):
        pattern = node_pattern(args, eid)
        if pattern is not None:
            levels = args.victim_levels if eid == args.victim else args.other_levels
            noise[eid] = stack.enter_context(HostNoise(by_address[address], pattern[0], levels,
                                                       seed=args.seed + 100 * (1 + int(eid))))
    return noise


def node_pattern(args, executor_id: str):
    """``(burst schedule, share in bursts)`` of one node (an executor id, or on the emulated cluster a host
    index), or ``None`` for a quiet one.

    The victim gets ``--share``, ``--burst-len`` and ``--burst-gap``; with ``--noisy-nodes every`` each
    other node gets ``--other-share``, ``--other-burst-len`` and ``--other-burst-gap`` on a seed of its own,
    so the nodes' bursts are independent.
    """
    if executor_id == args.victim:
        share, (low, high), gap, seed = args.share, args.burst_len, args.burst_gap, args.seed
    elif args.noisy_nodes == "every":
        share, (low, high), gap = args.other_share, args.other_burst_len, args.other_burst_gap
        seed = args.seed + 1 + int(executor_id)
    else:
        return None
    return burst_schedule(seed, args.burst_window_s, mean_gap=gap, min_len=low, max_len=high), share


def _executor_pids(tm, args) -> dict:
    deadline = time.time() + 120
    while time.time() < deadline:
        pids = {e["executorId"]: e["pid"] for e in tm.executors().to_pylist() if e["event"] == "registered"}
        if len(pids) >= args.executors:
            return pids
        time.sleep(0.5)
    raise RuntimeError(f"Only executors {sorted(pids)} registered within 120 s; expected {args.executors}.")


def rows_of(result: dict, args):
    from spark_plugin.wrangler import build_dataset

    records = result["records"]
    return build_dataset(records["task"].to_pandas(), records["node"].to_pandas(),
                         max_age_ms=2 * args.interval_ms)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.wrangler", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--executors", type=int, default=3)
    parser.add_argument("--cluster", choices=("hosts", "emulated", "local"), default="hosts",
                        help="one host (loopback address) per executor on a standalone cluster (default); the "
                             "emulated hosts of benchmarks.cluster (a network namespace and cgroups each; noise "
                             "runs as hogs inside the hosts' groups); or local-cluster, where every executor "
                             "shares one host and speculation cannot act")
    parser.add_argument("--victim", default="2", help="executor id of the noisy neighbour's victim")
    parser.add_argument("--host-cpus", type=float, default=0.6, help="emulated: each host's CPU quota in cores")
    parser.add_argument("--iops", type=int, default=200, help="emulated: each host's read and write IOPS cap")
    parser.add_argument("--victim-levels", type=_levels, default=_levels("cpu=3,io=4,memory=0.97"),
                        metavar="KIND=LEVEL,...",
                        help="emulated: the victim host's hogs and their levels, one drawn per burst (cpu and "
                             "io: processes; memory: fraction of the host's limit; default %(default)s)")
    parser.add_argument("--other-levels", type=_levels, default=_levels("cpu=1,io=1,memory=0.9"),
                        metavar="KIND=LEVEL,...", help="emulated: the other hosts' hogs (default %(default)s)")
    parser.add_argument("--partitions", type=int, default=12, help="tasks per stage")
    parser.add_argument("--work", type=int, default=1_500_000, help="Python loop steps per task")
    parser.add_argument("--warmup-jobs", type=int, default=30)
    parser.add_argument("--jobs", type=int, default=15, help="measured jobs per arm and round")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--interval-ms", type=int, default=1000, help="Wrangler's Delta")
    parser.add_argument("--hold-cap", default="10s", help="spark.wrangler.hold.maxDuration")
    parser.add_argument("--hold-share", type=float, default=None,
                        help="spark.wrangler.hold.maxShare (default: the key's default)")
    parser.add_argument("--share", type=float, default=0.1, help="CPU share of one core left during a burst")
    parser.add_argument("--node-share", type=float, default=None,
                        help="cap every executor at this many cores outside bursts, so that each behaves as a "
                             "node of its own (needs the cgroup method; default: no cap, executors share the host)")
    parser.add_argument("--burst-window-s", type=float, default=600)
    parser.add_argument("--burst-gap", type=float, default=8.0, help="mean seconds between bursts (exponential)")
    parser.add_argument("--burst-len", type=_seconds_range, default=(3.0, 8.0), metavar="MIN,MAX",
                        help="burst lengths, uniform between MIN and MAX seconds (default 3,8)")
    parser.add_argument("--noisy-nodes", choices=("every", "victim"), default="every",
                        help="starve every node, each in its own pattern (default), or the victim alone")
    parser.add_argument("--other-share", type=float, default=0.3, help="CPU share of the other nodes in a burst")
    parser.add_argument("--other-burst-len", type=_seconds_range, default=(1.0, 4.0), metavar="MIN,MAX",
                        help="burst lengths of the other nodes (default 1,4)")
    parser.add_argument("--other-burst-gap", type=float, default=20.0,
                        help="mean seconds between the other nodes' bursts")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--arms", default=",".join(ARMS), help="comma-separated subset of " + ",".join(ARMS))
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--tag", default="", help="appended to the result's name (<date>-<sha>-<tag>.json)")
    args = parser.parse_args(argv)
    from spark_plugin.wrangler import StragglerPredictor, evaluate

    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="wrangler-bench-")))
        cluster = None
        if args.cluster == "hosts":
            master = stack.enter_context(StandaloneCluster(workers=args.executors, cores=1, memory="1g",
                                                           host_per_worker=True)).url
        elif args.cluster == "emulated":
            cluster = _emulated_cluster(args, stack, work / "cluster")
            master = cluster["master"]
        else:
            master = f"local-cluster[{args.executors},1,1024]"
        if cluster is None:
            print(f"noise: {'cgroup cpu quota' if unavailable_reason() is None else unavailable_reason()}",
                  file=sys.stderr)
        warm = run_app(args, master, "warmup", {}, None, None, args.warmup_jobs, work, cluster)
        train_rows = rows_of(warm, args)
        t0 = time.perf_counter()
        model = StragglerPredictor(min_node_tasks=50).fit(train_rows)
        train_total_s = time.perf_counter() - t0
        model_path = model.save(work / "wrangler.joblib")
        runs = []
        for r in range(args.rounds):
            for name in arms[r % len(arms):] + arms[:r % len(arms)]:
                extra, p = ARMS[name]
                print(f"round {r + 1}: {name}", file=sys.stderr)
                runs.append({"round": r, **run_app(args, master, name, extra, model_path if p is not None else None,
                                                   p, args.jobs, work, cluster)})
        held_out = [rows_of(x, args) for x in runs if x["arm"] == "default"]
    quality = {}
    if held_out:
        from spark_plugin.wrangler.dataset import concat

        test = concat(held_out)
        quality = {f"p={p}": evaluate(model, test, confidence=p) for p in (0.7, 0.0)}
    summary = summarize(runs, arms)
    cost = {"train_rows": len(train_rows), "train_stragglers": int(train_rows.y.sum()),
            "train_total_s": train_total_s, "fit_seconds": model.fit_seconds_,
            "node_models": sorted(model.node_models_),
            "predict_s_per_node": _per_node_predict_cost(runs, args.executors)}
    for x in runs:
        x.pop("records")
    meta = run_metadata({k: v for k, v in vars(args).items() if k != "out"} | {"noise": warm["noise"]})
    path = result_path("wrangler", "json", meta, args.out)
    if args.tag:
        path = path.with_name(f"{path.stem}-{args.tag}{path.suffix}")
    path = write_json(path,
                      {"meta": meta, "runs": runs, "summary": summary, "quality": quality, "cost": cost,
                       "warmup": {k: v for k, v in warm.items() if k != "records"}})
    print(write_report(path))
    return 0


def summarize(runs: list, arms: list) -> dict:
    """Per arm: pooled percentiles, task-seconds and delays; ratios to default and to speculation, pooled
    and per round (each arm's round against the baseline's same round) with their 95% t-interval."""
    out = {}
    for name in arms:
        mine = [x for x in runs if x["arm"] == name]
        if not mine:
            continue
        out[name] = {"job": percentiles([v for x in mine for v in x["job_s"]]),
                     "stage": percentiles([v for x in mine for v in x["stage_s"]]),
                     **{k: sum(x[k] for x in mine) / len(mine) for k in (
                         "task_seconds", "speculative_attempts", "queue_delay_p50_s", "queue_delay_p90_s",
                         "median_task_s", "victim_task_fraction", "straggler_fraction", "holds", "held_s",
                         "wall_s")}}
    for base in BASELINES:
        if base not in out:
            continue
        for s in out.values():
            s[f"vs_{base}"] = {"job_p99": s["job"]["p99"] / out[base]["job"]["p99"],
                               "job_p50": s["job"]["p50"] / out[base]["job"]["p50"],
                               "stage_p99": s["stage"]["p99"] / out[base]["stage"]["p99"],
                               "task_seconds": s["task_seconds"] / out[base]["task_seconds"]}
        for name, s in out.items():
            s[f"rounds_vs_{base}"] = _round_ratios(runs, name, base)
    if "default" in out:
        base = out["default"]
        for s in out.values():
            s["delay_overhead_pct_of_task"] = 100 * (s["queue_delay_p50_s"] - base["queue_delay_p50_s"]) / base[
                "median_task_s"]
    return out


def _round_ratios(runs: list, arm: str, base: str) -> dict:
    """Job p99 and task-seconds of ``arm`` over ``base``, per round, and their interval over rounds."""
    by_round = {(x["round"], x["arm"]): x for x in runs}
    pairs = [(by_round[r, arm], by_round[r, base]) for r, name in by_round if name == arm and (r, base) in by_round]
    p99 = [percentiles(a["job_s"])["p99"] / percentiles(b["job_s"])["p99"] for a, b in pairs]
    task_s = [a["task_seconds"] / b["task_seconds"] for a, b in pairs]
    return {"job_p99": {"per_round": p99, **interval(p99)} if p99 else {},
            "task_seconds": {"per_round": task_s, **interval(task_s)} if task_s else {}}


def _emulated_cluster(args, stack, directory: Path) -> dict:
    """Up the emulated hosts (one one-core executor each) for the run; down when it ends."""
    from benchmarks.cluster import emulated

    state = emulated.up(emulated.ClusterSpec(hosts=args.executors, executors_per_host=1, apps=1,
                                             cpus_per_host=args.host_cpus, iops=args.iops), directory,
                        log=lambda line: print(line, file=sys.stderr))
    stack.callback(emulated.down, directory, log=lambda _: None)
    if "memory" not in state["hosts"][0]["cgroups"]:
        for levels in (args.victim_levels, args.other_levels):
            levels.pop("memory", None)  # the memory hog fills a v1 memory group's limit
    return state


def _levels(text: str) -> dict[str, float]:
    from .hogs import KINDS

    out = {}
    for part in text.split(","):
        kind, _, level = part.partition("=")
        if kind.strip() not in KINDS or not level:
            raise argparse.ArgumentTypeError(f"expected KIND=LEVEL pairs with KIND in {', '.join(KINDS)}, got {text!r}")
        out[kind.strip()] = float(level)
    return out


def _seconds_range(text: str) -> tuple[float, float]:
    low, high = (float(v) for v in text.split(","))
    if not 0 < low <= high:
        raise argparse.ArgumentTypeError(f"expected MIN,MAX with 0 < MIN <= MAX seconds, got {text!r}")
    return low, high


def _per_node_predict_cost(runs: list, executors: int) -> dict:
    ticks = [s / executors for x in runs for s in x["predict_seconds"]]
    return percentiles(ticks) if ticks else {}
