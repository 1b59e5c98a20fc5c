"""Rotary-DLT's benchmark: ``python -m benchmarks.dlt [--seeds 0,1,2] [--jobs 20] [--arms ...]``.

Each seed draws a workload (:mod:`.workload`: mixed models and criteria, Poisson arrivals) and every arm
runs it on the same device (this machine's CPU), arms in an order rotated by seed. Before the arms, a
history of past jobs is filled once (each model kind trained for ``--history-epochs`` epochs at each batch
size), which the estimators of every arm read. The measure is the number of jobs attained (criterion met
within budget) per arm and seed, with each arm's mean and 95% interval over seeds, and its paired
difference from ``rotary-dlt`` per seed. Results go to ``benchmarks/results/dlt/`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from benchmarks.common import interval, result_path, run_metadata, write_json

from .report import write_report
from .workload import KINDS, build, jobs

ARMS = {  # name: (policy, pack)
    "fifo": ("fifo", False), "edf": ("edf", False), "srtf": ("srtf", False), "fair": ("fair", False),
    "rotary-dlt": ("rotary-dlt", False), "rotary-dlt+pack": ("rotary-dlt", True),
    "rotary-dlt-deadline": ("rotary-dlt-deadline", False),
}


def fill_history(x, y, validation, epochs: int):
    """A history with one finished job per model kind and batch size (the arms' similar past jobs)."""
    from tf_packing.dlt import History, JobRecord
    from tf_packing.memory import model_bytes

    history = History()
    for kind in KINDS:
        for batch in (16, 32, 64):
            model = build(kind, 0.003, seed=batch)
            accuracies, seconds = [], []
            for _ in range(epochs):
                started = time.monotonic()
                logs = model.fit(x, y, batch_size=batch, epochs=1, verbose=0, validation_data=validation)
                seconds.append(time.monotonic() - started)
                accuracies.append(float(logs.history["val_accuracy"][-1]))
            history.add(JobRecord(kind, batch, float(model_bytes(model, batch)), accuracies, seconds))
    return history


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.dlt", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--mean-gap", type=float, default=1.0, help="mean seconds between arrivals")
    parser.add_argument("--deadline-scale", type=float, default=1.0)
    parser.add_argument("--threshold", type=float, default=0.5, help="Rotary-DLT's T")
    parser.add_argument("--memory-mb", type=float, default=1.0,
                        help="device memory the chosen jobs' estimates must fit (1 MB: two of the widest jobs, dozens of the smallest)")
    parser.add_argument("--max-pack", type=int, default=4)
    parser.add_argument("--history-epochs", type=int, default=12)
    parser.add_argument("--arms", default=",".join(ARMS), help="comma-separated subset of " + ",".join(ARMS))
    parser.add_argument("--tag", default="")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    unknown = sorted(set(arms) - set(ARMS))
    if unknown:
        parser.error(f"unknown arms {unknown}; choose from {', '.join(ARMS)}")
    seeds = [int(s) for s in args.seeds.split(",")]

    from tf_packing import load_digits
    from tf_packing.dlt import DltArbiter, DltJob, History

    (x, y), validation = load_digits(seed=0)
    meta = run_metadata(vars(args) | {"out": None})
    started = time.monotonic()
    past = fill_history(x, y, validation, args.history_epochs)
    print(f"history: {len(past.records)} past jobs in {time.monotonic() - started:.0f} s", flush=True)
    runs = []
    for s, seed in enumerate(seeds):
        specs = jobs(seed, args.jobs, mean_gap_s=args.mean_gap, deadline_scale=args.deadline_scale)
        for name in arms[s % len(arms):] + arms[:s % len(arms)]:
            policy, pack = ARMS[name]
            workload = [DltJob(j["name"], lambda j=j: build(j["kind"], j["lr"], j["seed"]), j["criterion"],
                               kind=j["kind"], batch_size=j["batch_size"], arrival_s=j["arrival_s"]) for j in specs]
            arbiter = DltArbiter(x, y, validation, policy=policy, threshold=args.threshold, pack=pack,
                                 max_pack=args.max_pack, memory_bytes=args.memory_mb * 2**20,
                                 history=History(records=list(past.records)))
            began = time.monotonic()
            results = arbiter.run(workload)
            wall = time.monotonic() - began
            attained = sum(r["status"] == "attained" for r in results)
            print(f"seed {seed} {name}: {attained}/{len(results)} attained in {wall:.0f} s", flush=True)
            runs.append({"seed": seed, "arm": name, "attained": attained, "wall_s": wall, "jobs": results,
                         "rounds": len(arbiter.rounds_),
                         "packed_rounds": sum(len(r["chosen"]) > 1 for r in arbiter.rounds_)})
    payload = {"meta": meta, "workloads": {seed: jobs(seed, args.jobs, mean_gap_s=args.mean_gap,
                                                      deadline_scale=args.deadline_scale) for seed in seeds},
               "runs": runs, "summary": summarize(runs, arms, seeds)}
    path = result_path("dlt", "json", meta, args.out)
    if args.tag:
        path = path.with_name(path.name.replace(".json", f".{args.tag}.json"))
    write_json(path, payload)
    print(write_report(path, payload))
    return 0


def summarize(runs: list, arms: list, seeds: list) -> dict:
    """Per arm: attained jobs' mean and interval over seeds, and the paired difference from rotary-dlt."""
    def attained(arm, seed):
        return next(r["attained"] for r in runs if r["arm"] == arm and r["seed"] == seed)

    out = {}
    for arm in arms:
        per_seed = [attained(arm, s) for s in seeds]
        out[arm] = {"attained": interval(per_seed) | {"per_seed": per_seed}}
        if "rotary-dlt" in arms and arm != "rotary-dlt":
            diffs = [attained("rotary-dlt", s) - attained(arm, s) for s in seeds]
            out[arm]["rotary_minus_arm"] = interval(diffs) | {"per_seed": diffs}
    return out


if __name__ == "__main__":
    raise SystemExit(main())
