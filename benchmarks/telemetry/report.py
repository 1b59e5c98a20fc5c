"""Render a telemetry-overhead result JSON as Markdown and PNG."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from benchmarks.common import markdown_table, pyplot, save_figure, write_markdown


def write_report(json_path: Path) -> Path:
    """Write ``<stem>.md`` and ``<stem>.png`` next to ``json_path``; return the Markdown path."""
    data = json.loads(Path(json_path).read_text())
    meta, summary, ratios = data["meta"], data["summary"], data["ratio_to_vanilla"]
    rows = [[m, s["median"], s["min"], s["max"], s["n"], ratios[m]] for m, s in summary.items()]
    per_round = [[i + 1] + [r[m] for m in summary] for i, r in enumerate(data["round_ratios"])]
    reads = [s for r in data["rounds"] for s in r["telemetry"]["read_seconds"]]
    cpu = [s for r in data["rounds"] for s in r["telemetry"].get("listener_cpu_seconds", [])]
    vanilla_median = data["summary"]["vanilla"]["median"]
    conf = meta["conf"]
    md = "\n".join([
        "# Telemetry overhead",
        "",
        f"{meta['date']} · commit {meta['git_sha']} · pyspark {meta['pyspark']} · {meta['java']} · "
        f"{meta['machine']['cpus']} CPUs",
        "",
        f"Job: {conf['tasks']} tasks ({conf['tasks'] - conf['reducers']} maps, {conf['reducers']} reducers) on "
        f"`{conf['master']}`, AQE off; {conf['rounds']} interleaved rounds × {conf['jobs']} timed jobs per "
        f"mode, each process after {conf['warmup']} untimed warm-up jobs.",
        "",
        markdown_table(["mode", "median s", "min s", "max s", "jobs", "median / vanilla"], rows),
        "",
        "Ratio to vanilla per round (medians within the round):",
        "",
        markdown_table(["round"] + list(summary), per_round),
        "",
        f"Vanilla's own spread (max/min): {data['vanilla_noise']:.3f}. Reading one job's "
        f"{conf['tasks']} task records into Arrow took {statistics.median(reads) * 1000:.0f} ms (median).",
        "",
        *([f"CPU time of the telemetry listener's thread per job (the exact cost of recording, on the "
           f"driver): median {statistics.median(cpu) * 1000:.0f} ms, "
           f"{statistics.median(cpu) / conf['tasks'] * 1e6:.0f} µs per task, "
           f"{100 * statistics.median(cpu) / vanilla_median:.2f}% of one core over vanilla's median job time."]
          if cpu else []),
        "",
        "![job times per mode](" + Path(json_path).with_suffix(".png").name + ")",
        "",
    ])
    md_path = write_markdown(json_path, md)
    _plot(data, Path(json_path).with_suffix(".png"))
    return md_path


def _plot(data: dict, png: Path) -> None:
    plt = pyplot()
    modes = list(data["samples"])
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.boxplot([data["samples"][m] for m in modes], tick_labels=modes)
    for i, m in enumerate(modes, start=1):
        ax.scatter([i] * len(data["samples"][m]), data["samples"][m], s=12, alpha=0.6)
    ax.set_ylabel("job wall time (s)")
    ax.set_title(f"{data['meta']['conf']['tasks']}-task job: telemetry overhead")
    save_figure(fig, png)


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(write_report(Path(arg)))
