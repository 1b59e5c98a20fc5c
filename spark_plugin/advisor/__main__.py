"""``python -m spark_plugin.advisor RUN_FILE...``: how many executors a job should get, from runs at a few counts."""

from __future__ import annotations

import sys
from pathlib import Path

from spark_plugin.arguments import Parser, number_option, whole_number_option
from spark_plugin.errors import SparkrmError, UsageError, print_error
from spark_plugin.ownership import PLOT, save_figure

from .recommend import CORES_PER_EXECUTOR, MAX_SLOTS, TARGETS, WITHIN, recommend
from .runs import collect_runs, no_runs_message


def main(argv=None) -> int:
    parser = Parser(
        prog="python -m spark_plugin.advisor", description=__doc__.split(":", 1)[1].strip(),
        epilog="Run the job at two or more executor counts (three or more to check the fit on held-out runs), "
               "with spark.sparkrm.telemetry.dir or spark.eventLog.dir set, and pass the files.")
    parser.add_argument("files", nargs="+", type=Path,
                        help="telemetry files (*.telemetry.jsonl), Spark event logs (files or eventlog_v2_* folders, "
                             "any codec), or folders of them such as spark.eventLog.dir; an application named twice "
                             "(telemetry and event log) counts once")
    parser.add_argument("--job", default=None, help="the job group to model (default: whole applications)")
    parser.add_argument("--target", choices=TARGETS, default="fastest",
                        help="fastest, or cheapest: fewest slot-seconds within --within of the fastest")
    parser.add_argument("--within", type=number_option("--within", **WITHIN), default=10.0,
                        help="percent slower allowed for cheapest, >= 0 (default 10)")
    parser.add_argument("--cores-per-executor", type=whole_number_option("--cores-per-executor", **CORES_PER_EXECUTOR),
                        default=1, help="to turn slots into executors (default 1)")
    parser.add_argument("--max-slots", type=whole_number_option("--max-slots", **MAX_SLOTS), default=None,
                        help="the most task slots to advise, e.g. the cluster's cores (default: twice the most run)")
    parser.add_argument("--plot", type=Path, default=None, help="write measured and fitted speedups to this PNG")
    args = parser.parse_args(argv)
    try:
        if args.plot:  # before reading any log, so a refusal costs nothing
            _pyplot()
            PLOT.check_writable(args.plot, what="--plot")
        found = collect_runs(args.files, args.job)
        if not found.runs:
            raise SparkrmError(no_runs_message(found, args.job))
        runs = sorted(found.runs, key=lambda r: r.slots)
        advice = recommend(runs, target=args.target, within=args.within / 100,
                           cores_per_executor=args.cores_per_executor, max_slots=args.max_slots)
        print(report(runs, advice, args.job))
        for source, why in found.notes:
            print(f"note: {source} {why}")
        for source, why in found.left_out:
            print(f"left out: {source}: {why}")
        if args.plot:
            print(f"plot: {plot(runs, advice, args.plot, args.job)}")
    except (SparkrmError, ValueError, OSError) as e:
        return print_error(e, prefix="advisor")
    return 0


def report(runs, advice, job) -> str:
    lines = [f"{'job ' + repr(job) if job else 'application'}: {len(runs)} runs",
             "  slots  tasks  wall s"]
    lines += [f"  {r.slots:5d}  {r.tasks:5d}  {r.wall_s:6.1f}" for r in runs]
    errors = ", ".join(f"{name} {100 * e:.1f}%" if e is not None else f"{name} n/a (fewer than 3 runs)"
                       for name, e in advice.holdout_error.items())
    lines += [f"held-out error (median, each run predicted from the others): {errors}; using {advice.model}",
              f"scaling type {advice.scaling_type}: {advice.why}",
              f"recommended ({advice.target}): {advice.slots} task slot{'s' if advice.slots != 1 else ''}, "
              f"predicted {advice.predicted_s:.1f} s ({_range(advice.interval)}): "
              f"--conf spark.executor.instances={advice.executors} (or spark.dynamicAllocation.maxExecutors)"]
    if advice.interval.extrapolated:
        lines.append(f"  extrapolated: {advice.slots} slots lies beyond the measured "
                     f"{min(r.slots for r in runs)}-{max(r.slots for r in runs)}; the interval widens with the "
                     "distance")
    if advice.next_slots is not None:
        lines.append(f"  to narrow it, run next at {advice.next_slots} slot{'s' if advice.next_slots != 1 else ''} "
                     f"(predicted {_range(advice.intervals[advice.next_slots])}"
                     f"{', unmeasured' if advice.next_slots != advice.slots else ', the advice itself'})")
    if advice.partitioning_from:
        lines.append(f"partitions: {advice.tasks} tasks, {advice.tasks_per_slot:.1f} per slot: keep the partitioning "
                     f"of {advice.partitioning_from}")
    else:
        lines.append(f"partitions: the runs' own ({advice.tasks} tasks, {advice.tasks_per_slot:.1f} per slot); to have "
                     "the partitioning advised too, run one executor count at two or more partitionings")
    return "\n".join(lines)


def _range(iv) -> str:
    """``90% 5.1-7.4 s``: a prediction's interval (see spark_plugin.advisor.intervals)."""
    from .intervals import LEVEL

    return f"{100 * LEVEL:.0f}% interval {iv.low_s:.1f}-{iv.high_s:.1f} s"


def _pyplot():
    """matplotlib's pyplot on the file-only Agg backend, or a one-line :class:`UsageError` saying how to get it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise UsageError(f"--plot needs matplotlib (pip install 'sparkrm[bench]'): {e}") from None
    return plt


def plot(runs, advice, png: Path, job) -> Path:
    """Measured and fitted speedups as a PNG at ``png``, overwriting only a plot sparkrm wrote; its path."""
    plt = _pyplot()
    base = runs[0]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([r.slots for r in runs], [base.wall_s / r.wall_s for r in runs], "o", label="measured")
    for name, curve in advice.curve.items():
        ref = curve[base.slots]
        ax.plot(list(curve), [ref / t for t in curve.values()], "-" if name == advice.model else ":",
                label=f"{name.upper()} fit")
    slots = sorted(advice.intervals)
    ref = advice.curve[advice.model][base.slots]
    ax.fill_between(slots, [ref / advice.intervals[m].high_s for m in slots],
                    [ref / advice.intervals[m].low_s for m in slots], alpha=0.15, label="90% interval")
    ax.axvline(advice.slots, color="grey", lw=0.8, ls="--", label=f"recommended ({advice.target})")
    ax.set_xlabel("task slots")
    ax.set_ylabel(f"speedup over {base.slots} slot{'s' if base.slots > 1 else ''}")
    ax.set_title(f"{job or 'application'}: scaling type {advice.scaling_type}")
    ax.legend()
    fig.tight_layout()
    try:
        return save_figure(fig, png, what="--plot", dpi=120)
    finally:
        plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
