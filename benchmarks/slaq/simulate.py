"""Trace-driven SLAQ vs fair on a bigger cluster than this machine (spec 9.3).

    python -m benchmarks.slaq simulate benchmarks/results/slaq/<run>.json --cores 32 --jobs 40

A job's loss per iteration does not depend on how many cores ran it (thesis L1138), so the
loss curves recorded by a live ``workload`` run can be replayed under any allocation. Each
simulated job replays one recorded job (drawn with replacement, seeded); an iteration on ``n``
cores takes ``overhead + cpu / n`` seconds, with the job's recorded CPU seconds per iteration
times ``--work`` and a fixed ``--overhead``. Every epoch the real allocator decides from the
real predictor's forecasts of the reports so far, exactly as :class:`SlaqScheduler` does live.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.common import markdown_table, report_header, result_path, run_metadata, write_json

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
    """Replay ``jobs`` jobs drawn from ``recorded`` traces; returns traces as :mod:`.metrics` reads them."""
    from spark_plugin.slaq import JobCurve, LossHistory, LossPredictor, RuntimeModel, allocate, epoch_curve

    rng = random.Random(seed)
    pending, t = [], 0.0
    for i in range(jobs):
        src = rng.choice(recorded)
        losses = [p[1] for p in src["points"]]
        pending.append(_Job(f"{src['kind']}-{i}", t, losses, work * src["cpu_s"] / len(losses)))
        t += rng.expovariate(1.0 / mean_gap_s)
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
    return [{"arrival_s": j.arrival_s, "points": j.points} for j in finished]


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
            traces = simulate(recorded, policy=policy, cores=args.cores, jobs=args.jobs, mean_gap_s=gap,
                              epoch_s=args.epoch, overhead_s=args.overhead, work=args.work, seed=args.seed)
            results.setdefault(str(gap), {})[policy] = metrics.summarize(traces)
    json_path = write_json(result_path("slaq", "simulated.json", meta, args.out),
                           {"meta": meta, "source": str(args.source), "results": results})
    rows = []
    for gap, by_policy in results.items():
        fair = by_policy.get("fair")
        for policy, s in by_policy.items():
            rel = "" if fair is None or policy == "fair" else " ({:.2f}x)"
            rows.append([f"{float(gap):g} s", policy,
                         f"{s['time_to_90_s']:.1f}" + rel.format(s["time_to_90_s"] / fair["time_to_90_s"] if fair else 0),
                         f"{s['time_to_95_s']:.1f}" + rel.format(s["time_to_95_s"] / fair["time_to_95_s"] if fair else 0),
                         f"{s['avg_normalized_loss']:.3f}", f"{s['makespan_s']:.0f}"])
    md = report_header(meta, "SLAQ vs fair, trace-driven") + [
        f"{args.jobs} jobs replaying the loss curves of `{Path(args.source).name}` ({len(recorded)} recorded jobs), "
        f"{args.cores} cores, {args.epoch:g} s epochs, iteration = {args.overhead:g} s + {args.work:g} x recorded CPU "
        f"/ cores, seed {args.seed}.", "",
        markdown_table(["mean gap", "policy", "time to 90% s", "time to 95% s", "avg normalized loss", "makespan s"],
                       rows), ""]
    md_path = json_path.with_name(json_path.name.replace(".json", ".md"))
    md_path.write_text("\n".join(md))
    print(f"wrote {json_path} and {md_path}")
