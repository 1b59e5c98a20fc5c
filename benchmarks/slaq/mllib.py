"""SLAQ against the fair share on unmodified pyspark.ml estimators (``slaq.fit``), several seeds and loads.

    python -m benchmarks.slaq mllib --mix gradual --seeds 0,1,2 --loads 2,0.5 --jobs 8 --rows 40000
    python -m benchmarks.slaq mllib --mix gradual ... --arms fair,fair     # the A/A run: is the measurement fair?
    python -m benchmarks.slaq mllib-cost --repeat 5     # what the live feed costs one fit alone

Each job is a pyspark.ml estimator fitted by :func:`spark_plugin.slaq.fit` on a cached DataFrame, its
objective fed live to SLAQ; hyperparameters are drawn per seed (:func:`.workload.generate`). Two
mixes: ``linear`` (LogisticRegression, LinearSVC, LinearRegression with L-BFGS, KMeans: curves that
reach 90% of their reduction in 2-4 iterations) and ``gradual`` (GBTClassifier and GBTRegressor with
tens of trees, a MultilayerPerceptronClassifier: curves that reach 90% after 20-30 iterations; and
KMeans with many random-start centers, whose curve is steep, as a short job among them).

**Measurement without an order effect.** Every arm of every seed runs in a fresh application of its
own: data generated and cached, then a short fit (3 iterations) of each estimator of the mix,
unmeasured (a warm-up of the JVM's and Python's code paths), then the loads one after another. The
two arms of a seed run in alternated order (seed index even: as given; odd: reversed).
``--arms fair,fair`` compares the fair share with itself (labelled ``fair`` and ``fair-2``): its ratio
shows this measurement's own spread, and a slaq/fair ratio means something only outside it. Per run:
mean time to 90% and 95% loss reduction and the time-averaged normalized loss (:mod:`.metrics`); per
load, the second arm over the first, per seed and as a mean with a 95% t-interval over seeds.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from benchmarks.common import (benchmark_session, cluster_label, interval, interval_cells, markdown_table, report_header,
                               result_path, run_metadata, stop_and_clean, write_json, write_markdown)

from . import metrics
from .workload import JobSpec, generate, run_arrivals, trace, trainer_params

METRICS = ("time_to_90_s", "time_to_95_s", "avg_normalized_loss")
#: The estimator kinds of each mix.
MIXES = {"linear": ("logreg", "svm", "linreg", "kmeans"),
         "gradual": ("gbt", "mlp", "kmeans-wide", "gbt-regression")}


def gradual_params(kind: str, rng) -> dict:
    """Hyperparameters of a ``gradual`` job, drawn with ``rng``."""
    if kind in ("gbt", "gbt-regression"):
        return {"max_iter": rng.choice([20, 30, 40]), "depth": rng.choice([3, 4]), "step": rng.choice([0.1, 0.2]),
                "seed": rng.randrange(1000)}
    if kind == "mlp":
        return {"hidden": rng.choice([16, 32]), "max_iter": rng.choice([60, 100]), "seed": rng.randrange(1000)}
    return {"n_clusters": rng.choice([32, 48, 64]), "max_iter": 40, "seed": rng.randrange(1000)}


#: How each mix draws a job's hyperparameters (``linear``: iteration counts as in the trainers' workload).
PARAMS = {"linear": trainer_params, "gradual": gradual_params}
#: Features of the generated classification data (the perceptron's input layer).
FEATURES = 20


def estimator(spec: JobSpec):
    """The pyspark.ml estimator a job fits."""
    from pyspark.ml.classification import GBTClassifier, LinearSVC, LogisticRegression, MultilayerPerceptronClassifier
    from pyspark.ml.clustering import KMeans
    from pyspark.ml.regression import GBTRegressor, LinearRegression

    p = spec.params
    if spec.kind == "logreg":
        return LogisticRegression(maxIter=p["max_iter"], regParam=p["reg"], tol=1e-9)
    if spec.kind == "svm":
        return LinearSVC(maxIter=p["max_iter"], regParam=p["reg"], tol=1e-9)
    if spec.kind == "linreg":
        return LinearRegression(maxIter=p["max_iter"], regParam=p["reg"], solver="l-bfgs", tol=1e-9)
    if spec.kind == "kmeans":
        return KMeans(k=p["n_clusters"], maxIter=p["max_iter"], seed=p["seed"], tol=1e-9)
    if spec.kind == "gbt":
        return GBTClassifier(maxIter=p["max_iter"], maxDepth=p["depth"], stepSize=p["step"], seed=p["seed"])
    if spec.kind == "mlp":
        return MultilayerPerceptronClassifier(layers=[FEATURES, p["hidden"], 2], maxIter=p["max_iter"], tol=1e-9,
                                              seed=p["seed"])
    if spec.kind == "kmeans-wide":
        return KMeans(k=p["n_clusters"], maxIter=p["max_iter"], seed=p["seed"], tol=1e-9, initMode="random")
    if spec.kind == "gbt-regression":
        return GBTRegressor(maxIter=p["max_iter"], maxDepth=p["depth"], stepSize=p["step"], seed=p["seed"])
    raise ValueError(f"unknown job kind {spec.kind!r}")


#: The generated data set each kind of job fits.
DATA_OF = {"logreg": "classification", "svm": "classification", "gbt": "classification", "mlp": "classification",
           "linreg": "regression", "gbt-regression": "regression", "kmeans": "clusters",
           "kmeans-wide": "many_clusters"}


def dataframes(spark, rows: int, partitions: int, kinds) -> dict:
    """A cached DataFrame (``features`` and ``label``, ``rows`` generated rows) for each of ``kinds``; only
    the data sets those kinds fit are generated, each once."""
    import numpy as np
    from pyspark.ml.linalg import Vectors
    from sklearn.datasets import make_blobs, make_classification, make_regression

    def classification():
        return make_classification(rows, FEATURES, n_informative=10, random_state=0)

    def regression():
        x, y = make_regression(rows, FEATURES, effective_rank=6, tail_strength=0.6, noise=1.0, random_state=1)
        return x / x.std(0), y / y.std()

    def clusters():
        return make_blobs(rows, 10, centers=16, random_state=2)[0], np.zeros(rows)

    def many_clusters():
        return make_blobs(rows, 10, centers=64, cluster_std=2.0, random_state=4)[0], np.zeros(rows)

    def frame(x, y):
        data = [(Vectors.dense(r), float(v)) for r, v in zip(x, y)]
        df = spark.createDataFrame(data, ["features", "label"]).repartition(partitions).cache()
        df.count()
        return df

    makers = {"classification": classification, "regression": regression, "clusters": clusters,
              "many_clusters": many_clusters}
    built = {name: frame(*makers[name]()) for name in sorted({DATA_OF[kind] for kind in kinds})}
    return {kind: built[DATA_OF[kind]] for kind in kinds}


def arm_labels(policies: list[str]) -> list[str]:
    """A label per arm: the policy's name, ``-2`` added to the second of the same policy (A/A runs)."""
    return [p if p not in policies[:i] else f"{p}-{policies[:i].count(p) + 1}" for i, p in enumerate(policies)]


def run_policy(spark, frames: dict, specs: list[JobSpec], policy: str, cores: int, epoch_s: float,
               enforce: str) -> dict:
    """Fit ``specs`` (arriving on time) under ``policy``, each fit following its grant by ``enforce``; returns
    each job's ``[time, loss]`` trace."""
    from spark_plugin import slaq

    traces = {}
    with slaq.SlaqScheduler(spark, cores=cores, policy=policy, epoch_s=epoch_s) as scheduler:
        def train(spec: JobSpec):
            with scheduler.job(spec.name) as job:
                slaq.fit(estimator(spec), frames[spec.kind], job, enforce=enforce)
                traces[spec.name] = trace(spec, job)

        run_arrivals(scheduler, specs, train, policy)
    return {"traces": traces, "summary": metrics.summarize([t for t in traces.values() if len(t["points"]) > 1])}


def warm_up(frames: dict, mix: str, seed: int) -> float:
    """Fit a short version (3 iterations) of each estimator kind of ``mix``, unmeasured; returns the seconds
    it took."""
    started = time.perf_counter()
    for spec in generate(len(MIXES[mix]), 1.0, seed, MIXES[mix], PARAMS[mix]):
        short = estimator(spec)
        short.copy({short.maxIter: 3}).fit(frames[spec.kind])
    return time.perf_counter() - started


def run_arm(args, label: str, policy: str, seed: int) -> dict:
    """One arm of one seed in a fresh application: data, warm-up, then every load; ``{load: run}``."""
    conf = {"spark.driver.memory": "2g", "spark.ui.showConsoleProgress": "false", "spark.scheduler.mode": "FAIR"}
    spark = benchmark_session(args, ["telemetry"], conf=conf, app_name=f"slaq-mllib-{label}-seed{seed}")
    app_id = spark.sparkContext.applicationId
    cores = spark.sparkContext.defaultParallelism
    try:
        frames = dataframes(spark, args.rows, 2 * cores, MIXES[args.mix])
        warm_s = warm_up(frames, args.mix, seed)
        out = {}
        for load in args.loads:
            specs = generate(args.jobs, load, seed, MIXES[args.mix], PARAMS[args.mix])
            run_ = run_policy(spark, frames, specs, policy, cores, args.epoch, args.enforce)
            out[str(load)] = {**run_, "warm_up_s": warm_s, "cores": cores}
        return out
    finally:
        stop_and_clean(spark, app_id)


def compare(runs: dict, base: str = "fair", other: str = "slaq") -> dict:
    """Per load and metric: ``other``/``base`` ratio per seed and its interval over seeds."""
    out = {}
    for load, by_seed in runs.items():
        for key in METRICS:
            ratios = [r[other]["summary"][key] / r[base]["summary"][key] for r in by_seed.values()
                      if r[other]["summary"][key] and r[base]["summary"][key]]
            if ratios:
                out.setdefault(load, {})[key] = {"per_seed": ratios, **interval(ratios)}
    return out


def compare_jobs(runs: dict, base: str = "fair", other: str = "slaq") -> dict:
    """Per load, job by job: which estimators gain and whether any job starves.

    ``time_to_90_s``: per estimator kind, ``other``/``base`` of the kind's mean time to 90% per seed and
    its interval over seeds. ``completion``: each job's time from arrival to its last iteration under
    ``other`` over the same under ``base`` (same seed, same job), the worst job of each seed.
    """
    out = {}
    for load, by_seed in runs.items():
        by_kind: dict = {}
        worst = []
        for r in by_seed.values():
            traces = {arm: r[arm].get("traces", {}) for arm in (base, other)}
            jobs = sorted(set(traces[base]) & set(traces[other]))
            for kind in sorted({traces[base][j]["kind"] for j in jobs}):
                means = [metrics.mean_time_to_reduction([traces[arm][j] for j in jobs if traces[arm][j]["kind"] == kind
                                                         and len(traces[arm][j]["points"]) > 1], 0.9)
                         for arm in (base, other)]
                if all(means):
                    by_kind.setdefault(kind, []).append(means[1] / means[0])
            completion = [_completion_s(traces[other][j]) / _completion_s(traces[base][j]) for j in jobs
                          if _completion_s(traces[base][j]) > 0]
            if completion:
                worst.append(max(completion))
        out[load] = {"time_to_90_s": {kind: {"per_seed": ratios, **interval(ratios)} for kind, ratios in by_kind.items()},
                     "worst_completion": worst}
    return out


def _completion_s(trace: dict) -> float:
    return trace["points"][-1][0] - trace["arrival_s"] if trace["points"] else 0.0


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
        frames = dataframes(spark, args.rows, cores, {kind for _, kind in cases.values()})
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


def run(args) -> Path:
    from tqdm import tqdm

    policies = args.arms
    labels = arm_labels(policies)
    meta = run_metadata(vars(args) | {"out": str(args.out)})
    runs: dict = {}
    with tqdm(total=len(args.seeds) * len(labels), desc="SLAQ on pyspark.ml", unit="application") as bar:
        for index, seed in enumerate(args.seeds):
            order = list(zip(labels, policies))
            for label, policy in (order if index % 2 == 0 else order[::-1]):
                bar.set_postfix_str(f"seed {seed}, {label}")
                for load, run_ in run_arm(args, label, policy, seed).items():
                    runs.setdefault(load, {}).setdefault(str(seed), {})[label] = run_
                bar.update()
    payload = {"meta": meta, "arms": labels, "runs": runs, "comparison": compare(runs, labels[0], labels[1]),
               "jobs": compare_jobs(runs, labels[0], labels[1])}
    name = f"mllib-{args.mix}-{'-'.join(labels)}-{args.enforce}.json"
    path = write_json(result_path("slaq", name, meta, args.out), payload)
    print(f"wrote {path} and {write_report(path)}")
    return path


def write_report(json_path: Path) -> Path:
    import json

    data = json.loads(Path(json_path).read_text())
    conf = data["meta"]["conf"]
    base, other = data["arms"]
    rows = []
    for load, by_metric in data["comparison"].items():
        per_arm = {a: {k: statistics.fmean(v for r in data["runs"][load].values()
                                           if (v := r[a]["summary"][k]) is not None) for k in METRICS}
                   for a in (base, other)}
        rows += [[f"{float(load):g} s", key, f"{per_arm[base][key]:.3g}", f"{per_arm[other][key]:.3g}",
                  *interval_cells(by_metric[key])] for key in METRICS if key in by_metric]
    jobs = data.get("jobs") or compare_jobs(data["runs"], base, other)
    kind_rows = [[f"{float(load):g} s", kind, *interval_cells(c)]
                 for load, by in jobs.items() for kind, c in by["time_to_90_s"].items()]
    worst = [[f"{float(load):g} s", " ".join(f"{r:.2f}" for r in by["worst_completion"])] for load, by in jobs.items()]
    kinds = ", ".join(MIXES[conf["mix"]])
    enforce = conf.get("enforce", "width")  # runs before enforce="share" existed coalesced every fit
    md = report_header(data["meta"], f"{other} against {base} on unmodified pyspark.ml estimators") + [
        f"Mix `{conf['mix']}` ({kinds}) via `slaq.fit(..., enforce=\"{enforce}\")`, {conf['jobs']} jobs per run on "
        f"{conf['rows']} generated rows, Poisson arrivals (`{cluster_label(conf)}`, FAIR), {conf['epoch']:g} s epochs, "
        f"seeds {', '.join(map(str, conf['seeds']))}. Each arm of each seed in a fresh application after a warm-up "
        "(a short fit of every estimator, unmeasured), the arms' order alternated by seed. Times from arrival to X% "
        "of the job's loss reduction, averaged over jobs; normalized loss averaged over active jobs and time. "
        f"Ratio {other} / {base} per seed, then its mean with a 95% t-interval over seeds.", "",
        markdown_table(["mean gap", "metric", f"{base} (mean)", f"{other} (mean)", f"{other}/{base} per seed",
                        "mean [95% interval]", "interval excludes 1"], rows), "",
        f"Time to 90% by estimator: the kind's mean, {other} / {base} per seed.", "",
        markdown_table(["mean gap", "estimator", f"{other}/{base} per seed", "mean [95% interval]",
                        "interval excludes 1"], kind_rows), "",
        f"Starvation: each job's time from arrival to its last iteration, {other} / {base}; the worst job per seed.",
        "", markdown_table(["mean gap", "worst job per seed"], worst), ""]
    return write_markdown(json_path, md)


def _fmt(v):
    return "-" if v is None else f"{v:.2f}"
