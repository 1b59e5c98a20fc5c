"""Rotary-DLT's benchmark: ``python -m benchmarks.dlt [--seeds 0,1,2] [--jobs 20] [--arms ...]``.

Each seed draws a workload (:mod:`.workload`: mixed models and criteria, Poisson arrivals; ``--mix``
deadlines or the thesis's) and every arm runs it on the same device (this machine's CPU), arms in an order
rotated by seed. Before the arms, a history of past jobs is filled once (each model kind trained for
``--history-epochs`` epochs at each batch size), which the estimators of every arm read.

Measures (:mod:`.metrics`), per arm and seed, with each arm's mean and 95% interval over seeds: jobs
attained (criterion met within budget); jobs attained by a quarter, half and three quarters of the time
FIFO takes for the whole workload (without a FIFO arm, the fastest arm's; the same times for every arm of
a seed); the worst job's attainment
progress averaged over that time; the mean time to attain. The headline (``attained`` for the deadlines
mix, ``attained by half`` for the thesis's, where every budget is in epochs) and the worst job's progress
are also given as each Rotary-DLT arm's paired difference from each other arm. Results go to ``benchmarks/results/dlt/`` (or
``--out``).
"""

from __future__ import annotations

import argparse
import os
import re
import time
from pathlib import Path

from benchmarks.common import check_outputs, interval, labelled_names_problem, result_path, run_metadata, write_json
from spark_plugin.arguments import Parser, checked_option, number_option, whole_number_option
from spark_plugin.errors import NotOursError, UsageError
from tf_packing.dlt.policies import max_pack_of, threshold_of

from . import metrics
from .report import write_report
from .workload import KINDS, MIXES, build, jobs

ARMS = {  # name: (policy, pack, threshold T; None: --threshold)
    "fifo": ("fifo", False, None), "edf": ("edf", False, None), "srtf": ("srtf", False, None),
    "fair": ("fair", False, None), "srf": ("srf", False, None), "bcf": ("bcf", False, None),
    "laf": ("laf", False, None),
    "rotary-dlt": ("rotary-dlt", False, None), "rotary-dlt+pack": ("rotary-dlt", True, None),
    "rotary-dlt-efficiency": ("rotary-dlt", False, 0.0), "rotary-dlt-fairness": ("rotary-dlt", False, 1.0),
    "rotary-dlt-deadline": ("rotary-dlt-deadline", False, None),
}
DEFAULT_ARMS = "fifo,edf,srtf,fair,rotary-dlt,rotary-dlt+pack"
FRACTIONS = (0.25, 0.5, 0.75)  # of FIFO's time for the whole workload


def fill_history(x, y, validation, epochs: int):
    """A history with one finished job per model kind and batch size (the arms' similar past jobs)."""
    from tf_packing.dlt import History, JobRecord
    from tf_packing.repack.memory import model_bytes

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


#: The most jobs of a seed's workload and the most epochs of each past job: the run's time grows with both.
MAX_JOBS, MAX_HISTORY_EPOCHS = 1000, 1000


_SEED = whole_number_option("--seeds", low=0, high=2**32 - 1, fix="Pass comma-separated seeds, e.g. 0,1,2.")


def seeds_option(text: str) -> list[int]:
    """``--seeds``: comma-separated whole numbers, each once (an argparse ``type=``)."""
    seeds = [_SEED(part.strip()) for part in text.split(",")]
    if len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"--seeds {text!r} gives a seed twice: each seed is one workload. Pass "
                                         "each once, e.g. 0,1,2.")
    return seeds


def tag_option(text: str) -> str:
    """``--tag``: a word that may stand in a file name."""
    if text and not re.fullmatch(r"[\w-]+", text):
        raise argparse.ArgumentTypeError(f"--tag {text!r} must be letters, digits, '-' or '_' (it goes into the "
                                         "result's file name), e.g. --tag rerun")
    return text


def main(argv=None) -> int:
    parser = Parser(prog="python -m benchmarks.dlt", description=__doc__,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=seeds_option, default="0,1,2")
    parser.add_argument("--jobs", type=whole_number_option("--jobs", low=1, high=MAX_JOBS), default=20)
    parser.add_argument("--mean-gap", type=number_option("--mean-gap", low=0, low_open=True), default=1.0,
                        help="mean seconds between arrivals")
    parser.add_argument("--mix", choices=list(MIXES), default="deadlines", help="the workload's criteria")
    parser.add_argument("--deadline-scale", type=number_option("--deadline-scale", low=0, low_open=True), default=1.0)
    parser.add_argument("--threshold", type=checked_option(threshold_of, "--threshold"), default=0.5,
                        help="Rotary-DLT's T")
    parser.add_argument("--memory-mb", type=number_option("--memory-mb", low=0, low_open=True), default=1.0,
                        help="device memory the chosen jobs' estimates must fit (1 MB: two of the widest jobs, dozens of the smallest)")
    parser.add_argument("--max-pack", type=checked_option(max_pack_of, "--max-pack", int), default=4)
    parser.add_argument("--history-epochs", type=whole_number_option("--history-epochs", low=1,
                                                                     high=MAX_HISTORY_EPOCHS), default=12)
    parser.add_argument("--arms", default=DEFAULT_ARMS, help="comma-separated subset of " + ",".join(ARMS) + "; ARM@LABEL runs an arm again "
                        "under another name (an A/A run)")
    parser.add_argument("--tag", default="", type=tag_option,
                        help="a word added to the result's file name (letters, digits, '-', '_')")
    parser.add_argument("--out", type=Path, help="folder of the results (default: benchmarks/results/dlt/)")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    problem = labelled_names_problem(arms, ARMS, "--arms")
    if problem:
        parser.error(problem)
    seeds = args.seeds
    meta = run_metadata(vars(args) | {"seeds": ",".join(map(str, seeds)), "out": None})
    try:  # before the run: a file of the user's in the way costs nothing yet
        path = result_path("dlt", "json", meta, args.out)
        if args.tag:
            path = path.with_name(path.name.replace(".json", f".{args.tag}.json"))
        check_outputs(path)
    except (NotOursError, UsageError) as e:
        parser.error(str(e))

    from tf_packing import load_digits
    from tf_packing.dlt import DltArbiter, DltJob, History

    (x, y), validation = load_digits(seed=0)
    started = time.monotonic()
    past = fill_history(x, y, validation, args.history_epochs)
    print(f"history: {len(past.records)} past jobs in {time.monotonic() - started:.0f} s", flush=True)
    runs, draw = [], dict(mean_gap_s=args.mean_gap, deadline_scale=args.deadline_scale, mix=args.mix)
    for s, seed in enumerate(seeds):
        specs = jobs(seed, args.jobs, **draw)
        for name in arms[s % len(arms):] + arms[:s % len(arms)]:
            policy, pack, threshold = ARMS[name.partition("@")[0]]
            workload = [DltJob(j["name"], lambda j=j: build(j["kind"], j["lr"], j["seed"]), j["criterion"],
                               kind=j["kind"], batch_size=j["batch_size"], arrival_s=j["arrival_s"], seed=j["seed"])
                        for j in specs]
            arbiter = DltArbiter(x, y, validation, policy=policy, pack=pack,
                                 threshold=args.threshold if threshold is None else threshold,
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
    headline = "attained" if args.mix == "deadlines" else "attained_by_0.5"
    payload = {"meta": meta, "workloads": {seed: jobs(seed, args.jobs, **draw) for seed in seeds},
               "runs": runs, "headline": headline}
    payload["summary"], payload["paired"] = summarize(runs, arms, seeds, headline)
    write_json(path, payload)
    print(write_report(path, payload))
    return 0


def measures(results: list[dict], reference_s: float) -> dict:
    """One run's measures, at times that are fractions of ``reference_s`` (FIFO's time for the workload)."""
    times = [k * 0.25 for k in range(int(reference_s / 0.25) + 1)]
    return {"attained": sum(r["status"] == "attained" for r in results),
            **{f"attained_by_{f:g}": metrics.attained_by(results, f * reference_s) for f in FRACTIONS},
            "worst_progress": metrics.worst_progress(results, times),
            "time_to_attain_s": metrics.time_to_attain(results)}


def summarize(runs: list, arms: list, seeds: list, headline: str) -> tuple[dict, dict]:
    """Per arm, each measure's mean and interval over seeds; and per Rotary-DLT arm and other arm, the paired
    differences of the ``headline`` measure and of the worst job's progress."""
    table = {}
    for seed in seeds:
        of_seed = metrics.runs_by_arm(runs, seed)
        reference_s = metrics.reference_time(of_seed)
        for arm, run in of_seed.items():
            table[arm, seed] = measures(run["jobs"], reference_s)
    summary = {}
    for arm in arms:
        summary[arm] = {}
        for key in table[arm, seeds[0]]:
            per_seed = [table[arm, s][key] for s in seeds]
            if all(v is not None for v in per_seed):
                summary[arm][key] = interval(per_seed) | {"per_seed": per_seed}
    paired = {}
    ours_arms = [a for a in arms if a.startswith("rotary-dlt")]
    for ours in ours_arms:  # each pair once: a Rotary-DLT arm against the others, and those after it
        for other in (a for a in arms if a not in ours_arms or ours_arms.index(a) > ours_arms.index(ours)):
            paired[f"{ours} - {other}"] = {}
            for key in (headline, "worst_progress"):
                diffs = [table[ours, s][key] - table[other, s][key] for s in seeds]
                paired[f"{ours} - {other}"][key] = interval(diffs) | {"per_seed": diffs}
    return summary, paired


if __name__ == "__main__":
    raise SystemExit(main())
