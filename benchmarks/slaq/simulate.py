"""Trace-driven SLAQ's objectives and fair share on a bigger cluster than this machine (spec 9.3).

    python -m benchmarks.slaq simulate benchmarks/results/slaq/<run>.json --cores 32 --jobs 40 \
        --policies slaq,maxmin,fair --seeds 0,1,2,3,4

Max-sum (``slaq``, Objective A) and max-min (``maxmin``, Objective B) are the shared utility allocator's two
objectives; each run reports the time-averaged normalized loss of the active jobs and of the worst-served job, and every
policy's ratio over max-sum per seed with a 95% interval.

A job's loss per iteration does not depend on how many cores ran it (thesis L1138), so the
loss curves recorded by a live ``workload`` run can be replayed under any allocation. Each
simulated job replays one recorded job (drawn with replacement, seeded); an iteration on ``n``
cores takes ``overhead + cpu / n`` seconds, with the job's recorded CPU seconds per iteration
times ``--work`` and a fixed ``--overhead``. Every epoch the real allocator decides from the
real predictor's forecasts of the reports so far, exactly as :class:`SlaqScheduler` does live.
"""

from __future__ import annotations

import dataclasses
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.common import interval, markdown_table, report_header, result_path, run_metadata, write_json, write_markdown

from . import metrics


@dataclass
class _Job:
    name: str
    arrival_s: float
    losses: list
    cpu_s: float  # per iteration
    done: int = 0  # iterations finished
    progress: float = 0.0  # fraction of the current iteration done
    points: list = field(default_factory=list)


def simulate(recorded: list[dict], *, policy: str, cores: int, jobs: int, mean_gap_s: float, epoch_s: float,
             overhead_s: float, work: float, seed: int) -> list[dict]:
    """Replay ``jobs`` jobs drawn from ``recorded`` traces; returns traces as :mod:`.metrics` reads them, each
    with ``alone_loss_s``: the job's loss-seconds when it runs alone on the same cores (fair share gives it
    every one), what :func:`.metrics.worst_job_slowdown` divides by."""
    traces = _replay(_draw(recorded, jobs, mean_gap_s, work, seed), policy, cores, epoch_s, overhead_s)
    by_name = {trace["name"]: trace for trace in traces}
    for job in _draw(recorded, jobs, mean_gap_s, work, seed):
        [alone] = _replay([dataclasses.replace(job, arrival_s=0.0)], "fair", cores, epoch_s, overhead_s)
        by_name[job.name]["alone_loss_s"] = metrics.summarize([alone])["worst_job_loss_s"]
    return traces


def _draw(recorded: list[dict], jobs: int, mean_gap_s: float, work: float, seed: int) -> list[_Job]:
    """``jobs`` fresh jobs, each replaying a recorded trace drawn with ``seed``, at Poisson arrivals."""
    rng = random.Random(seed)
    drawn, t = [], 0.0
    for i in range(jobs):
        src = rng.choice(recorded)
        losses = [p[1] for p in src["points"]]
        drawn.append(_Job(f"{src['kind']}-{i}", t, losses, work * src["cpu_s"] / len(losses)))
        t += rng.expovariate(1.0 / mean_gap_s)
    return drawn


def _replay(pending: list[_Job], policy: str, cores: int, epoch_s: float, overhead_s: float) -> list[dict]:
    """Run ``pending`` under ``policy`` until every job has replayed its trace; traces in finishing order."""
    from spark_plugin.slaq import JobCurve, LossHistory, LossPredictor, RuntimeModel, allocate, epoch_curve

    predictor, histories, runtimes, served = LossPredictor(), {}, {}, {}
    active, finished, now = [], [], 0.0
    objective = {"slaq": "reduction", "maxmin": "maxmin", "fair": "fair"}[policy]
    while pending or active:
        active += [j for j in pending if j.arrival_s <= now]
        pending = [j for j in pending if j.arrival_s > now]
        for job in active:
            histories.setdefault(job.name, LossHistory())
            runtimes.setdefault(job.name, RuntimeModel())
        if policy == "fair":
            active.sort(key=lambda j: (served.get(j.name, 0.0), j.arrival_s))
            curves = [JobCurve(j.name) for j in active]
        else:
            curves = [JobCurve(j.name, epoch_curve(predictor.forecast(histories[j.name]), runtimes[j.name], epoch_s,
                                                   objective="reduction" if policy == "slaq" else "loss"))
                      for j in active]
        grant = allocate(curves, cores, objective=objective) if curves else {}
        for job in active:
            n = grant.get(job.name, 0)
            served[job.name] = served.get(job.name, 0.0) + n * epoch_s
            _advance(job, n, now, epoch_s, overhead_s, histories[job.name], runtimes[job.name])
        finished += [j for j in active if j.done == len(j.losses)]
        active = [j for j in active if j.done < len(j.losses)]
        now += epoch_s
    return [{"name": j.name, "arrival_s": j.arrival_s, "points": j.points} for j in finished]


def _advance(job: _Job, cores: int, start: float, epoch_s: float, overhead_s: float, history, runtime) -> None:
    """Run ``job`` on ``cores`` for one epoch, reporting every iteration that finishes in it."""
    if cores == 0:
        return
    iteration_s = overhead_s + job.cpu_s / cores
    clock = start
    while job.done < len(job.losses):
        left = (1.0 - job.progress) * iteration_s
        if clock + left > start + epoch_s:
            job.progress += (start + epoch_s - clock) / iteration_s
            return
        clock += left
        job.progress = 0.0
        loss = job.losses[job.done]
        history.record(job.done, loss, cpu_time_s=job.cpu_s, time_s=clock)
        runtime.update(job.cpu_s, wall_s=iteration_s, cores=cores)
        job.points.append([clock, loss])
        job.done += 1


def run(args) -> None:
    source = json.loads(Path(args.source).read_text())
    recorded = [tr for by_policy in source["runs"].values() for tr in next(iter(by_policy.values()))["traces"].values()]
    meta = run_metadata({k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()})
    results = {}
    for gap in args.loads:
        for policy in args.policies:
            for seed in args.seeds:
                traces = simulate(recorded, policy=policy, cores=args.cores, jobs=args.jobs, mean_gap_s=gap,
                                  epoch_s=args.epoch, overhead_s=args.overhead, work=args.work, seed=seed)
                summary = metrics.summarize(traces)
                summary.pop("curve")
                results.setdefault(str(gap), {}).setdefault(policy, {})[str(seed)] = summary
    base = "slaq" if "slaq" in args.policies else args.policies[0]
    comparison = {gap: {policy: {m: _ratio(by_policy[policy], by_policy[base], m) for m in MEASURES}
                        for policy in by_policy if policy != base} for gap, by_policy in results.items()}
    json_path = write_json(result_path("slaq", "simulated.json", meta, args.out),
                           {"meta": meta, "source": str(args.source), "results": results, "baseline": base,
                            "comparison": comparison})
    rows = []
    for gap, by_policy in results.items():
        for policy, per_seed in by_policy.items():
            means = [_mean([s[m] for s in per_seed.values()]) for m in MEASURES]
            ratios = ["-" if policy == base else _cell(comparison[gap][policy][m]) for m in MEASURES]
            rows.append([f"{float(gap):g} s", policy, *(f"{v:.3g}" for v in means), *ratios])
    md = report_header(meta, "SLAQ's objectives and fair share, trace-driven") + [
        f"{args.jobs} jobs replaying the loss curves of `{Path(args.source).name}` ({len(recorded)} recorded jobs), "
        f"{args.cores} cores, {args.epoch:g} s epochs, iteration = {args.overhead:g} s + {args.work:g} x recorded CPU "
        f"/ cores, seeds {','.join(map(str, args.seeds))}. The worst-served job, as the largest over jobs of: "
        "its loss-seconds (normalized loss summed over its life) over its loss-seconds alone on the same cores "
        "(`worst_job_slowdown`); its loss-seconds (`worst_job_loss_s`, mostly the longest job's); its time from "
        "arrival to 90% of its loss reduction; its normalized loss averaged over its own life "
        f"(`worst_job_normalized_loss`). Ratios: policy over `{base}` per seed, mean [95%].",
        "", markdown_table(["mean gap", "policy", *MEASURES, *(f"{m} / {base}" for m in MEASURES)], rows), ""]
    md_path = write_markdown(json_path, md)
    print(f"wrote {json_path} and {md_path}")


#: What each simulated run is compared on (keys of :func:`.metrics.summarize`).
MEASURES = ("worst_job_slowdown", "worst_job_loss_s", "worst_time_to_90_s", "worst_job_normalized_loss",
            "avg_normalized_loss", "time_to_90_s", "makespan_s")


def _ratio(per_seed: dict, base: dict, measure: str) -> dict:
    """``measure`` of a policy over the baseline's, per seed, with its mean and 95% interval."""
    ratios = [per_seed[s][measure] / base[s][measure] for s in per_seed
              if per_seed[s][measure] is not None and base[s][measure]]
    return (interval(ratios) if ratios else {"mean": None, "low": None, "high": None}) | {"per_seed": ratios}


def _cell(c: dict) -> str:
    if c["mean"] is None:
        return "-"
    return f"{c['mean']:.2f}x" + ("" if c["low"] is None else f" [{c['low']:.2f}, {c['high']:.2f}]")


def _mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else float("nan")
