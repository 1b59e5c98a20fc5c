"""Markdown and PNG reports of the Rotary benchmarks, rendered from their JSON alone."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from benchmarks.common import markdown_table, pyplot, report_header, save_figure, write_markdown

KINDS = ("light", "medium", "heavy")


def write_time_to_accuracy_report(json_path: Path) -> Path:
    data = json.loads(Path(json_path).read_text())
    conf, queries = data["meta"]["conf"], data["queries"]

    def cell(entry):
        return "not reached" if entry["of_exact"] is None else f"{entry['of_exact']:.2f} ({entry['fraction_of_data']:.0%} of data)"

    rows = [[f"Q{q}", r["exact_s"], r["progressive_total_s"], cell(r["time_to_95"]), cell(r["time_to_99"])]
            for q, r in queries.items()]
    md = report_header(data["meta"], "Rotary: time to accuracy of progressive TPC-H queries") + [
        f"SF {conf['sf']:g}, {conf['batches']} batches, `local-cluster[{conf['executors']},1,2048]`. Exact time: the "
        f"TPC-H query over the whole tables in the same application (median of {conf['repeat']} after a warm-up). "
        "Times to accuracy are cumulative processing time of the progressive query, as a multiple of the exact "
        "query's time; true accuracy is the mean over cells of min(est/exact, exact/est).", "",
        markdown_table(["query", "exact s", "all batches s", "time to 95% / exact", "time to 99% / exact"], rows), "",
        f"![accuracy over time]({Path(json_path).with_suffix('.png').name})", ""]
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    colors = plt.get_cmap("tab20").colors
    for i, (q, r) in enumerate(queries.items()):
        ax.plot([p["elapsed_s"] / r["exact_s"] for p in r["points"]], [p["true_accuracy"] for p in r["points"]],
                marker=".", color=colors[i % len(colors)], label=f"Q{q}")
    for level in (0.95, 0.99):
        ax.axhline(level, color="grey", linewidth=0.6, linestyle="--")
    ax.set_xlabel("processing time / exact query time")
    ax.set_ylabel("true accuracy")
    ax.legend(ncol=4, fontsize=7)
    save_figure(fig, Path(json_path).with_suffix(".png"), dpi=110)
    return write_markdown(json_path, md)


def summarize(records: list[dict]) -> dict:
    """Attained per class, false attainments and waiting times of one policy's run."""
    out = {f"attained_{k}": sum(r["status"] == "attained" for r in records if r["kind"] == k) for k in KINDS}
    out.update({f"jobs_{k}": sum(r["kind"] == k for r in records) for k in KINDS})
    out["attained"] = sum(r["status"] == "attained" for r in records)
    out["false_attainments"] = sum(r["false_attainment"] for r in records)
    out["avg_waiting_s"] = statistics.mean(r["waiting_vs_alone_s"] for r in records) if records else 0.0
    out["avg_true_accuracy"] = statistics.mean(r["true_accuracy"] for r in records) if records else 0.0
    return out


def write_workload_report(json_path: Path) -> Path:
    data = json.loads(Path(json_path).read_text())
    conf = data["meta"]["conf"]
    summaries = {name: summarize(run["records"]) for name, run in data["runs"].items()}
    rows = [[name] + [f"{s[f'attained_{k}']}/{s[f'jobs_{k}']}" for k in KINDS]
            + [f"{s['attained']}/{len(data['runs'][name]['records'])}", s["false_attainments"], s["avg_waiting_s"],
               s["avg_true_accuracy"], f"{100 * data['runs'][name]['overhead_s'] / data['runs'][name]['wall_s']:.2f}%"]
            for name, s in summaries.items()]
    md = report_header(data["meta"], f"Rotary: {conf['jobs']} approximate jobs ({conf['mix']}) under each policy") + [
        f"SF {conf['sf']:g}, {conf['batches']} batches, {conf['cores']} cores arbitrated every {conf['epoch_s']:g} s "
        f"(`local-cluster[{conf['executors']},{conf.get('executor_cores', 1)},2048]`, FAIR pools); workload seed {conf['seed']}, times x "
        f"{conf['time_scale']:g} of Table 3.1; envelope window {conf['window']}. Policies ran one after another "
        "on the same workload in one application.", "",
        markdown_table(["policy", "light", "medium", "heavy", "attained", "false attainments", "avg waiting s",
                        "avg true accuracy at stop", "scheduler overhead"], rows), "",
        "Attained: the envelope estimate reached the threshold (or every batch was processed) before the "
        "deadline. False attainment: attained, but the true accuracy at that moment was below the threshold. "
        "Waiting: turnaround minus the time the same job needs alone to meet its criterion.", "",
        f"![attained jobs]({Path(json_path).with_suffix('.png').name})", ""]
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.8))
    names = list(summaries)
    width = 0.8 / len(KINDS)
    for i, k in enumerate(KINDS):
        ax.bar([x + i * width for x in range(len(names))], [summaries[n][f"attained_{k}"] for n in names], width,
               label=k)
    ax.set_xticks([x + width for x in range(len(names))], names)
    ax.set_ylabel("attained jobs")
    ax.legend()
    save_figure(fig, Path(json_path).with_suffix(".png"), dpi=110)
    return write_markdown(json_path, md)
