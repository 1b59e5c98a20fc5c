"""SLAQ vs the fair baseline on real Spark training jobs, at several loads, in the same application.

    python -m benchmarks.slaq workload --loads 6,3,1.5 --jobs 12 --rows 200000
    python -m benchmarks.slaq mllib --seeds 0,1,2   # unmodified pyspark.ml estimators through slaq.fit (mllib.py)
    python -m benchmarks.slaq rescale        # the cross-application coordinator's costs (rescale.py)
    python -m benchmarks.slaq simulate RUN.json --cores 32   # replay a run's curves on more cores (simulate.py)

For every load (mean seconds between Poisson arrivals; smaller is heavier) the same seeded job
mix runs once under each policy, one run after another in one ``local-cluster`` application.
Recorded per run: every job's loss reports with their times, and the scheduler's decisions.
Then, from those traces: average time to 90% and 95% loss reduction, the average normalized loss
of active jobs over time, loss-prediction error 1/5/10 iterations ahead (curve fit vs strawman).
Also measured: the runtime model's core scaling (one job on 1 then 2 cores) and the allocator's
decision time for 4,000 jobs on 16,000 cores.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from benchmarks.common import add_master_option, benchmark_session, result_path, run_metadata, write_json

from spark_plugin.slaq.estimators import ENFORCEMENT

from . import metrics
from .report import write_report
from .workload import JobSpec, PinnedJob, datasets, generate, run_arrivals, trace, trainer

POLICIES = ("fair", "slaq")


def session(args):
    conf = {"spark.driver.memory": "2g", "spark.ui.showConsoleProgress": "false", "spark.scheduler.mode": "FAIR"}
    return benchmark_session(args, ["telemetry"], conf=conf, app_name="slaq-benchmark")


def run_workload(spark, data: dict, specs: list[JobSpec], policy: str, cores: int, epoch_s: float, progress) -> dict:
    """Run ``specs`` (arriving on time) under ``policy``; returns traces and decisions."""
    from spark_plugin.slaq.scheduler import SlaqScheduler

    traces = {}
    with SlaqScheduler(spark, cores=cores, policy=policy, epoch_s=epoch_s) as slaq:
        def train(spec: JobSpec):
            with slaq.job(spec.name, max_cores=data[spec.kind].partitions) as job:
                trainer(spec).fit(data[spec.kind], job)
                traces[spec.name] = {**trace(spec, job), "cpu_s": float(np.nansum(job.history.cpu_times_))}
            progress(spec.name)

        run_arrivals(slaq, specs, train, policy)
    decisions = [r.decision_ms for r in slaq.timeline]
    return {"traces": traces, "decisions": len(decisions),
            "decision_ms": {"median": statistics.median(decisions), "max": max(decisions)},
            "timeline": [{"t": r.time_s, "cores": r.cores} for r in slaq.timeline]}


def runtime_scaling(data, spec: JobSpec, iterations: int = 8) -> dict:
    """Median iteration wall time of one job pinned to 1 then 2 cores, and its CPU time per iteration."""
    out = {}
    for cores in (1, 2):
        pinned = PinnedJob(cores)
        trainer(JobSpec(spec.name, spec.kind, 0.0, {**spec.params, "max_iter": iterations})).fit(data, pinned)
        walls, cpus = zip(*pinned.iterations[1:])
        out[str(cores)] = {"wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus)}
    out["speedup"] = out["1"]["wall_s"] / out["2"]["wall_s"]
    return out


def decision_time(jobs: int = 4000, cores: int = 16000, repeat: int = 5, seed: int = 0) -> dict:
    """Seconds for one Objective A decision over ``jobs`` jobs with fitted forecasts (fits are cached per report)."""
    from spark_plugin.slaq import JobCurve, LossHistory, LossPredictor, RuntimeModel, allocate, epoch_curve

    rng = np.random.default_rng(seed)
    predictor, curves = LossPredictor(), []
    fit_started = time.perf_counter()
    for j in range(jobs):
        n = int(rng.integers(6, 30))
        k = np.arange(n)
        loss = 1.0 / (rng.uniform(0.01, 1) * k + 1) if j % 2 else rng.uniform(0.6, 0.95) ** k
        history = LossHistory()
        for i in k:
            history.record(int(i), float(loss[i]) * 10 + 1)
        runtime = RuntimeModel().update(float(rng.uniform(0.05, 2.0)))
        curves.append(JobCurve(f"j{j}", epoch_curve(predictor.forecast(history), runtime, 2.0)))
    fit_s = time.perf_counter() - fit_started
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        allocate(curves, cores)
        times.append(time.perf_counter() - started)
    return {"jobs": jobs, "cores": cores, "allocate_s": {"median": statistics.median(times), "max": max(times)},
            "forecast_all_s": fit_s}


def synthetic_prediction_errors() -> dict:
    """Predictor error on the thesis's two convergence classes, as a reference for the real traces."""
    k = np.arange(60)
    return {"O(1/k)": metrics.prediction_errors(list(1.0 / (0.3 * k + 1) + 0.2)),
            "O(mu^k)": metrics.prediction_errors(list(0.9 ** k + 0.1))}


def main(argv=None) -> int:
    from tqdm import tqdm

    parser = argparse.ArgumentParser(prog="python -m benchmarks.slaq", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="kind", required=True)
    w = sub.add_parser("workload", help="SLAQ vs fair on Poisson arrivals of training jobs, at several loads")
    w.add_argument("--loads", type=lambda s: [float(x) for x in s.split(",")], default=[6.0, 3.0, 1.5],
                   help="mean seconds between arrivals, one run per value (default 6,3,1.5)")
    w.add_argument("--jobs", type=int, default=12, help="jobs per run (default 12)")
    w.add_argument("--policies", type=lambda s: s.split(","), default=list(POLICIES),
                   help="comma-separated, from slaq,maxmin,fair (default fair,slaq)")
    w.add_argument("--epoch", type=float, default=1.0, help="scheduling epoch in seconds (default 1)")
    w.add_argument("--executors", type=int, default=2, help="executor JVMs, one core each (default 2)")
    add_master_option(w)
    w.add_argument("--rows", type=int, default=200_000, help="rows of each generated data set (default 200000)")
    w.add_argument("--seed", type=int, default=0)
    m = sub.add_parser("mllib", help="SLAQ vs fair on pyspark.ml estimators fitted by slaq.fit, several seeds")
    m.add_argument("--seeds", type=lambda s: [int(x) for x in s.split(",")], default=[0, 1, 2],
                   help="workload seeds; policy order alternates between them (default 0,1,2)")
    m.add_argument("--loads", type=lambda s: [float(x) for x in s.split(",")], default=[8.0, 4.0, 2.0],
                   help="mean seconds between arrivals (default 8,4,2)")
    m.add_argument("--jobs", type=int, default=8, help="jobs per run (default 8)")
    m.add_argument("--rows", type=int, default=40_000, help="rows of each generated data set (default 40000)")
    m.add_argument("--epoch", type=float, default=1.0, help="scheduling epoch in seconds (default 1)")
    m.add_argument("--executors", type=int, default=2, help="executor JVMs, one core each (default 2)")
    m.add_argument("--mix", choices=("linear", "gradual"), default="gradual",
                   help="estimators: linear (L-BFGS models and KMeans) or gradual (boosted trees, "
                        "perceptrons, KMeans with many centers; default)")
    m.add_argument("--arms", type=_two_policies, default="fair,slaq",
                   help="the two policies compared, second over first (default fair,slaq; fair,fair: the A/A run)")
    m.add_argument("--enforce", choices=ENFORCEMENT, default="width",
                   help="how a fit follows its grant (slaq.fit's enforce): width coalesces each fit's input to its "
                        "grant at the start (default), share re-sizes running fits through FAIR pools")
    add_master_option(m)
    mc = sub.add_parser("mllib-cost", help="what slaq.fit's live feed costs one pyspark.ml fit alone")
    mc.add_argument("--repeat", type=int, default=5, help="alternated runs of each way (default 5)")
    mc.add_argument("--rows", type=int, default=40_000, help="rows of each generated data set (default 40000)")
    mc.add_argument("--executors", type=int, default=2, help="executor JVMs, one core each (default 2)")
    add_master_option(mc)
    r = sub.add_parser("rescale", help="executor resize latency and cache loss under the cross-application coordinator")
    r.add_argument("--rows", type=int, default=200_000, help="rows of the cached data set (default 200000)")
    r.add_argument("--rounds", type=int, default=3, help="shrink-and-grow rounds (default 3)")
    add_master_option(r)
    sim = sub.add_parser("simulate", help="replay a workload run's loss curves on a bigger simulated cluster")
    sim.add_argument("source", type=Path, help="a workload run's JSON")
    sim.add_argument("--cores", type=int, default=32, help="simulated cores (default 32)")
    sim.add_argument("--jobs", type=int, default=40, help="simulated jobs per run (default 40)")
    sim.add_argument("--loads", type=lambda s: [float(x) for x in s.split(",")], default=[4.0, 2.0, 1.0],
                     help="mean seconds between arrivals (default 4,2,1)")
    sim.add_argument("--policies", type=lambda s: s.split(","), default=list(POLICIES))
    sim.add_argument("--epoch", type=float, default=1.0, help="epoch in seconds (default 1)")
    sim.add_argument("--overhead", type=float, default=0.05, help="seconds per iteration no core saves (default 0.05)")
    sim.add_argument("--work", type=float, default=20.0,
                     help="multiplies recorded CPU per iteration, for data sets bigger than this machine's (default 20)")
    sim.add_argument("--seeds", type=lambda s: [int(x) for x in s.split(",")], default=[0],
                     help="comma-separated workload seeds (default 0)")
    for p in (w, m, mc, r, sim):
        p.add_argument("--out", type=Path, default=None, help="output folder (default benchmarks/results/slaq)")
    args = parser.parse_args(argv)
    if args.kind in ("mllib", "mllib-cost", "rescale", "simulate"):
        from . import mllib, rescale, simulate

        {"mllib": mllib.run, "mllib-cost": mllib.feed_cost, "rescale": rescale.run,
         "simulate": simulate.run}[args.kind](args)
        return 0
    unknown = [p for p in args.policies if p not in ("slaq", "maxmin", "fair")]
    if unknown or args.jobs < 1 or args.epoch <= 0 or args.executors < 1 or any(l <= 0 for l in args.loads):
        parser.error(f"bad arguments (unknown policies: {unknown}); --jobs >= 1, --epoch > 0, loads > 0")

    meta = run_metadata(vars(args) | {"out": str(args.out), "loads": args.loads})
    spark = session(args)
    cores = spark.sparkContext.defaultParallelism
    data = datasets(spark.sparkContext, args.rows, partitions=2 * cores)
    runs = {}
    try:
        probe = generate(len(("logreg", "svm", "linreg", "kmeans")), 1.0, args.seed)
        scaling = {s.kind: runtime_scaling(data[s.kind], s) for s in probe}
        with tqdm(total=len(args.loads) * len(args.policies) * args.jobs, desc="SLAQ benchmark", unit="job") as bar:
            for load in args.loads:
                specs = generate(args.jobs, load, args.seed)
                for policy in args.policies:
                    bar.set_postfix_str(f"load {load:g} s, {policy}")
                    run = run_workload(spark, data, specs, policy, cores, args.epoch, lambda name: bar.update())
                    run["summary"] = metrics.summarize(list(run["traces"].values()))
                    runs.setdefault(str(load), {})[policy] = run
    finally:
        spark.stop()
    errors = {}
    for load, by_policy in runs.items():
        for job in next(iter(by_policy.values()))["traces"].values():
            errors.setdefault(job["kind"], []).append(metrics.prediction_errors([p[1] for p in job["points"]]))
    payload = {"meta": meta, "cores": cores, "runs": runs, "runtime_scaling": scaling,
               "prediction_errors": {kind: _mean_errors(e) for kind, e in errors.items()},
               "synthetic_prediction_errors": synthetic_prediction_errors(), "decision_time": decision_time()}
    json_path = write_json(result_path("slaq", "json", meta, args.out), payload)
    print(f"wrote {json_path} and {write_report(json_path)}")
    return 0


def _two_policies(text: str) -> list[str]:
    """``--arms``: two of the scheduler's policies, comma-separated (the same one twice for an A/A run)."""
    from spark_plugin.slaq.scheduler import POLICIES as SCHEDULER_POLICIES

    arms = [a.strip() for a in text.split(",")]
    if len(arms) != 2 or not set(arms) <= set(SCHEDULER_POLICIES):
        raise argparse.ArgumentTypeError(f"expected two of {', '.join(sorted(SCHEDULER_POLICIES))} separated by a "
                                         f"comma, got {text!r}")
    return arms


def _mean_errors(per_job: list[dict]) -> dict:
    """Mean over jobs of each horizon's fit and strawman errors."""
    out = {}
    for h in per_job[0]:
        out[h] = {name: _mean([e[h][name] for e in per_job]) for name in ("fit", "strawman")}
    return out


def _mean(values):
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None
