"""Markdown and PNG report of a Rotary-DLT benchmark run."""

from __future__ import annotations

from pathlib import Path

from benchmarks.common import markdown_table, pyplot, report_header, save_figure, write_markdown


def _ci(c: dict) -> str:
    if c["low"] is None:
        return f"{c['mean']:.1f}"
    return f"{c['mean']:.1f} [{c['low']:.1f}, {c['high']:.1f}]"


def write_report(json_path: Path, payload: dict) -> Path:
    meta, summary, runs = payload["meta"], payload["summary"], payload["runs"]
    conf = meta["conf"]
    rows = []
    for arm, s in summary.items():
        walls = [r["wall_s"] for r in runs if r["arm"] == arm]
        diff = s.get("rotary_minus_arm")
        rows.append([arm, " ".join(str(v) for v in s["attained"]["per_seed"]), _ci(s["attained"]),
                     "-" if diff is None else " ".join(f"{v:+d}" for v in diff["per_seed"]),
                     "-" if diff is None else _ci(diff), f"{sum(walls) / len(walls):.0f}"])
    lines = report_header(meta, "Rotary-DLT: Keras jobs with completion criteria on one device") + [
        f"Command: `python -m benchmarks.dlt --seeds {conf['seeds']} --jobs {conf['jobs']} --mean-gap "
        f"{conf['mean_gap']:g} --deadline-scale {conf['deadline_scale']:g} --threshold {conf['threshold']:g} "
        f"--memory-mb {conf['memory_mb']:g} --max-pack {conf['max_pack']} --arms {conf['arms']}`", "",
        f"{conf['jobs']} jobs per seed on digits, arms rotated by seed; jobs attained (criterion met within "
        "budget), mean [95% interval] over seeds, and rotary-dlt's attained minus the arm's, per seed.", "",
        markdown_table(["arm", "attained per seed", "mean [95%]", "rotary-dlt minus arm", "mean [95%]",
                        "mean wall s"], rows), ""]
    fig, ax = pyplot().subplots(figsize=(7, 3.5))
    arms = list(summary)
    means = [summary[a]["attained"]["mean"] for a in arms]
    errors = [0 if summary[a]["attained"]["low"] is None else means[i] - summary[a]["attained"]["low"]
              for i, a in enumerate(arms)]
    ax.bar(arms, means, yerr=errors, capsize=4, color="#4c72b0")
    ax.set_ylabel(f"jobs attained of {conf['jobs']}")
    ax.set_title("Rotary-DLT and baselines (mean, 95% interval over seeds)")
    ax.tick_params(axis="x", rotation=20)
    save_figure(fig, Path(json_path).with_suffix(".png"))
    lines.append(f"![attained]({Path(json_path).with_suffix('.png').name})")
    return write_markdown(json_path, lines)
