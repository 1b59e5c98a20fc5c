"""Markdown and PNG report of a Rotary-DLT benchmark run."""

from __future__ import annotations

import statistics
from pathlib import Path

from benchmarks.common import markdown_table, pyplot, report_header, save_figure, write_markdown

from . import metrics


def _ci(c: dict, digits: int = 1) -> str:
    if c["low"] is None:
        return f"{c['mean']:.{digits}f}"
    return f"{c['mean']:.{digits}f} [{c['low']:.{digits}f}, {c['high']:.{digits}f}]"


LABELS = {"attained": "attained", "attained_by_0.25": "by 1/4", "attained_by_0.5": "by 1/2",
          "attained_by_0.75": "by 3/4", "worst_progress": "worst job's progress", "time_to_attain_s": "s to attain"}


def _cell(summary: dict, key: str) -> str:
    return _ci(summary[key], 2 if key == "worst_progress" else 1) if key in summary else "-"


def write_report(json_path: Path, payload: dict) -> Path:
    meta, summary, runs = payload["meta"], payload["summary"], payload["runs"]
    conf, headline = meta["conf"], payload["headline"]
    rows = [[arm, " ".join(f"{v:g}" for v in s[headline]["per_seed"])]
            + [_cell(s, key) for key in LABELS]
            + [f"{statistics.fmean(r['wall_s'] for r in runs if r['arm'] == arm):.0f}"] for arm, s in summary.items()]
    paired = [[pair, " ".join(f"{v:+g}" for v in d[headline]["per_seed"]), _ci(d[headline]),
               _ci(d["worst_progress"], 2)] for pair, d in payload["paired"].items()]
    lines = report_header(meta, "Rotary-DLT: Keras jobs with completion criteria on one device") + [
        f"Command: `python -m benchmarks.dlt --seeds {conf['seeds']} --jobs {conf['jobs']} --mix {conf['mix']} "
        f"--mean-gap {conf['mean_gap']:g} --deadline-scale {conf['deadline_scale']:g} --threshold "
        f"{conf['threshold']:g} --memory-mb {conf['memory_mb']:g} --max-pack {conf['max_pack']} "
        f"--arms {conf['arms']}`", "",
        f"{conf['jobs']} jobs per seed on digits ({conf['mix']} mix), arms rotated by seed. Mean [95% interval] "
        "over seeds of: jobs attained (criterion met within budget); attained by 1/4, 1/2 and 3/4 of the time "
        "FIFO took for the whole workload; the worst job's attainment progress averaged over that time; "
        f"seconds from arrival to attainment. Per seed: `{LABELS[headline]}`, the headline.", "",
        markdown_table(["arm", f"{LABELS[headline]} per seed"] + list(LABELS.values()) + ["mean wall s"], rows), "",
        "Paired differences, Rotary-DLT arm minus the other:", "",
        markdown_table(["pair", f"{LABELS[headline]} per seed", "mean [95%]", "worst job's progress, mean [95%]"],
                       paired), ""]
    _plot_over_time(payload, Path(json_path).with_suffix(".png"))
    lines.append(f"![attained and worst progress over time]({Path(json_path).with_suffix('.png').name})")
    return write_markdown(json_path, lines)


def _plot_over_time(payload: dict, png: Path) -> None:
    """The thesis's Figure 3.10 as curves: per arm, jobs attained and the worst job's attainment progress
    over time (as a fraction of FIFO's time for the workload), each the mean over seeds."""
    runs, seeds = payload["runs"], sorted({r["seed"] for r in payload["runs"]})
    fractions = [k / 40 for k in range(41)]
    fig, (left, right) = pyplot().subplots(1, 2, figsize=(10, 3.8))
    for arm in payload["summary"]:
        attained, worst = [], []
        for seed in seeds:
            of_seed = metrics.runs_by_arm(runs, seed)
            jobs, reference_s = of_seed[arm]["jobs"], metrics.reference_time(of_seed)
            attained.append([metrics.attained_by(jobs, f * reference_s) for f in fractions])
            worst.append([metrics.worst_progress(jobs, [f * reference_s]) for f in fractions])
        left.plot(fractions, [statistics.fmean(c) for c in zip(*attained)], label=arm)
        right.plot(fractions, [statistics.fmean(c) for c in zip(*worst)], label=arm)
    left.set(xlabel="time / FIFO's time for the workload", ylabel="jobs attained (mean over seeds)")
    right.set(xlabel="time / FIFO's time for the workload", ylabel="worst job's attainment progress")
    right.legend(fontsize=7)
    save_figure(fig, png)
