"""SLAQ vs the fair share on unmodified pyspark.ml estimators (``slaq.fit``), several seeds and loads.

    python -m benchmarks.slaq mllib --seeds 0,1,2 --loads 8,4,2 --jobs 8 --rows 40000
    python -m benchmarks.slaq mllib-cost --repeat 5     # what the live feed costs one fit alone

Each job is a pyspark.ml estimator (LogisticRegression, LinearSVC, LinearRegression with L-BFGS,
KMeans; hyperparameters drawn per seed by :func:`.workload.generate`) fitted by
:func:`spark_plugin.slaq.fit` on a cached DataFrame, its objective fed live to SLAQ. For every
seed and load the same jobs run under each policy, one run after another in one application, in
the order fair, slaq for even seed indices and slaq, fair for odd ones. Per run: mean time to 90%
and 95% loss reduction and the time-averaged normalized loss (:mod:`.metrics`); per load, the
slaq/fair ratio of each, per seed and as a mean with a 95% t-interval over seeds.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from benchmarks.common import (benchmark_session, cluster_label, interval, markdown_table, report_header, result_path,
                               run_metadata, write_json, write_markdown)

from . import metrics
from .workload import JobSpec, generate, run_arrivals, trace

METRICS = ("time_to_90_s", "time_to_95_s", "avg_normalized_loss")


def estimator(spec: JobSpec):
    """The pyspark.ml estimator a job fits (iteration counts as in the trainers' workload)."""
    from pyspark.ml.classification import LinearSVC, LogisticRegression
    from pyspark.ml.clustering import KMeans
    from pyspark.ml.regression import LinearRegression

    p = spec.params
    if spec.kind == "logreg":
        return LogisticRegression(maxIter=p["max_iter"], regParam=p["reg"], tol=1e-9)
    if spec.kind == "svm":
        return LinearSVC(maxIter=p["max_iter"], regParam=p["reg"], tol=1e-9)
    if spec.kind == "linreg":
        return LinearRegression(maxIter=p["max_iter"], regParam=p["reg"], solver="l-bfgs", tol=1e-9)
    return KMeans(k=p["n_clusters"], maxIter=p["max_iter"], seed=p["seed"], tol=1e-9)


def dataframes(spark, rows: int, partitions: int) -> dict:
    """One cached DataFrame per kind (``features`` and ``label``), ``rows`` generated rows each."""
    import numpy as np
    from pyspark.ml.linalg import Vectors
    from sklearn.datasets import make_blobs, make_classification, make_regression

    def frame(x, y):
        data = [(Vectors.dense(r), float(v)) for r, v in zip(x, y)]
        df = spark.createDataFrame(data, ["features", "label"]).repartition(partitions).cache()
        df.count()
        return df

    x, y = make_classification(rows, 20, n_informative=10, random_state=0)
    classification = frame(x, y)
    x, y = make_regression(rows, 20, effective_rank=6, tail_strength=0.6, noise=1.0, random_state=1)
    regression = frame(x / x.std(0), y / y.std())
    x, _ = make_blobs(rows, 10, centers=16, random_state=2)
    clusters = frame(x, np.zeros(rows))
    return {"logreg": classification, "svm": classification, "linreg": regression, "kmeans": clusters}


def run_policy(spark, frames: dict, specs: list[JobSpec], policy: str, cores: int, epoch_s: float) -> dict:
    """Fit ``specs`` (arriving on time) under ``policy``; returns each job's ``[time, loss]`` trace."""
    from spark_plugin import slaq

    traces = {}
    with slaq.SlaqScheduler(spark, cores=cores, policy=policy, epoch_s=epoch_s) as scheduler:
        def train(spec: JobSpec):
            with scheduler.job(spec.name) as job:
                slaq.fit(estimator(spec), frames[spec.kind], job)
                traces[spec.name] = trace(spec, job)

        run_arrivals(scheduler, specs, train, policy)
    return {"traces": traces, "summary": metrics.summarize([t for t in traces.values() if len(t["points"]) > 1])}


def feed_cost(args) -> Path:
    """Wall time of ``slaq.fit`` alone on every core against ``estimator.fit``, alternated, ``repeat`` times each.

    The feed itself is a log line per iteration; GBTs also pay for the training error MLlib
    computes only when its DEBUG line is on (one more pass over the data per tree).
    """
    from pyspark.ml.classification import GBTClassifier, LogisticRegression
    from pyspark.ml.clustering import KMeans
    from spark_plugin import slaq

    meta = run_metadata(vars(args) | {"out": str(args.out)})
    spark = benchmark_session(args, [], conf={"spark.driver.memory": "2g", "spark.ui.showConsoleProgress": "false"},
                              app_name="slaq-mllib-cost")
    cores = spark.sparkContext.defaultParallelism
    cases = {"LogisticRegression": (lambda: LogisticRegression(maxIter=30, tol=1e-9), "logreg"),
             "KMeans": (lambda: KMeans(k=16, maxIter=20, tol=1e-9, seed=1), "kmeans"),
             "GBTClassifier": (lambda: GBTClassifier(maxIter=10, maxDepth=4, seed=1), "logreg")}
    results = {}
    try:
        frames = dataframes(spark, args.rows, cores)
        for name, (make, kind) in cases.items():
            df = frames[kind]
            make().fit(df)  # warm-up
            times = {"plain": [], "slaq": []}
            for rep in range(args.repeat):
                for way in (("plain", "slaq") if rep % 2 == 0 else ("slaq", "plain")):
                    started = time.perf_counter()
                    if way == "plain":
                        make().fit(df)
                    else:
                        with slaq.SlaqScheduler(spark, cores=cores) as scheduler, scheduler.job(name) as job:
                            slaq.fit(make(), df, job)
                    times[way].append(time.perf_counter() - started)
            ratios = [s / p for s, p in zip(times["slaq"], times["plain"])]
            results[name] = {**times, "ratio": interval(ratios)}
    finally:
        spark.stop()
    path = write_json(result_path("slaq", "mllib-cost.json", meta, args.out), {"meta": meta, "cases": results})
    rows = [[name, f"{statistics.median(r['plain']):.2f}", f"{statistics.median(r['slaq']):.2f}",
             f"{r['ratio']['mean']:.3f} [{_fmt(r['ratio']['low'])}, {_fmt(r['ratio']['high'])}]"]
            for name, r in results.items()]
    md = report_header(meta, "What slaq.fit costs a fit alone") + [
        f"{args.rows} rows, `{cluster_label(vars(args))}`, {args.repeat} alternated runs of each way "
        "after a warm-up; ratio slaq.fit / fit per pair, mean with 95% t-interval.", "",
        markdown_table(["estimator", "fit median s", "slaq.fit median s", "ratio"], rows), ""]
    print(f"wrote {path} and {write_markdown(path, md)}")
    return path


def compare(runs: dict) -> dict:
    """Per load and metric: slaq/fair ratio per seed and its interval over seeds."""
    out = {}
    for load, by_seed in runs.items():
        for key in METRICS:
            ratios = [r["slaq"]["summary"][key] / r["fair"]["summary"][key] for r in by_seed.values()
                      if r["slaq"]["summary"][key] and r["fair"]["summary"][key]]
            if ratios:
                out.setdefault(load, {})[key] = {"per_seed": ratios, **interval(ratios)}
    return out


def run(args) -> Path:
    from tqdm import tqdm

    meta = run_metadata(vars(args) | {"out": str(args.out)})
    conf = {"spark.driver.memory": "2g", "spark.ui.showConsoleProgress": "false", "spark.scheduler.mode": "FAIR"}
    spark = benchmark_session(args, ["telemetry"], conf=conf, app_name="slaq-mllib")
    cores = spark.sparkContext.defaultParallelism
    runs: dict = {}
    try:
        frames = dataframes(spark, args.rows, 2 * cores)
        with tqdm(total=len(args.seeds) * len(args.loads) * 2, desc="SLAQ on pyspark.ml", unit="run") as bar:
            for index, seed in enumerate(args.seeds):
                for load in args.loads:
                    specs = generate(args.jobs, load, seed)
                    for policy in (("fair", "slaq") if index % 2 == 0 else ("slaq", "fair")):
                        bar.set_postfix_str(f"seed {seed}, gap {load:g} s, {policy}")
                        runs.setdefault(str(load), {}).setdefault(str(seed), {})[policy] = \
                            run_policy(spark, frames, specs, policy, cores, args.epoch)
                        bar.update()
    finally:
        spark.stop()
    payload = {"meta": meta, "cores": cores, "runs": runs, "comparison": compare(runs)}
    path = write_json(result_path("slaq", "mllib.json", meta, args.out), payload)
    print(f"wrote {path} and {write_report(path)}")
    return path


def write_report(json_path: Path) -> Path:
    import json

    data = json.loads(Path(json_path).read_text())
    conf = data["meta"]["conf"]
    rows = []
    for load, by_metric in data["comparison"].items():
        per_policy = {p: {k: statistics.fmean(r[p]["summary"][k] for r in data["runs"][load].values()
                                              if r[p]["summary"][k] is not None) for k in METRICS}
                      for p in ("fair", "slaq")}
        for key in METRICS:
            c = by_metric.get(key)
            if c is None:
                continue
            excludes = c["low"] is not None and (c["high"] < 1 or c["low"] > 1)
            rows.append([f"{float(load):g} s", key, f"{per_policy['fair'][key]:.3g}", f"{per_policy['slaq'][key]:.3g}",
                         " ".join(f"{r:.2f}" for r in c["per_seed"]),
                         f"{c['mean']:.2f} [{_fmt(c['low'])}, {_fmt(c['high'])}]", "yes" if excludes else "no"])
    md = report_header(data["meta"], "SLAQ on unmodified pyspark.ml estimators vs the fair share") + [
        f"{conf['jobs']} jobs per run (LogisticRegression, LinearSVC, LinearRegression with L-BFGS, KMeans via "
        f"`slaq.fit`; {conf['rows']} generated rows each), Poisson arrivals, {data['cores']} cores "
        f"(`{cluster_label(conf)}`, FAIR), {conf['epoch']:g} s epochs, seeds "
        f"{', '.join(map(str, conf['seeds']))} (policy order alternated by seed). Times from arrival to X% of the "
        "job's loss reduction, averaged over jobs; normalized loss averaged over active jobs and time. "
        "Ratio slaq / fair per seed, then its mean with a 95% t-interval over seeds.", "",
        markdown_table(["mean gap", "metric", "fair (mean)", "slaq (mean)", "slaq/fair per seed",
                        "mean [95% interval]", "interval excludes 1"], rows), ""]
    return write_markdown(json_path, md)


def _fmt(v):
    return "-" if v is None else f"{v:.2f}"
