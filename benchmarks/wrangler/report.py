"""Markdown and PNG report of the Wrangler benchmark, rendered from its JSON alone."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from benchmarks.common import markdown_table, pyplot, report_header, save_figure, write_markdown


def write_report(json_path: Path) -> Path:
    data = json.loads(Path(json_path).read_text())
    conf, s, q, cost = data["meta"]["conf"], data["summary"], data["quality"], data["cost"]
    rows = [[arm, v["job"]["p50"], v["job"]["p99"], v["stage"]["p50"], v["stage"]["p99"], v["task_seconds"],
             int(v["speculative_attempts"]), v.get("vs_default", {}).get("job_p99", float("nan")),
             v.get("vs_speculation", {}).get("job_p99", float("nan")),
             v.get("vs_speculation", {}).get("task_seconds", float("nan")),
             v["queue_delay_p50_s"], v.get("delay_overhead_pct_of_task", float("nan")),
             f"{100 * v['victim_task_fraction']:.0f}%", int(v["holds"]), v["held_s"]] for arm, v in s.items()]
    md = report_header(data["meta"], "Wrangler: noisy neighbours, one node per executor") + [
        f"{_cluster_text(conf)}; {_noise_text(conf)}; each job has two "
        f"stages of {conf['partitions']} CPU-bound tasks. Model trained on {cost['train_rows']} tasks "
        f"({cost['train_stragglers']} stragglers) of a {conf['warmup_jobs']}-job warm-up; then "
        f"{conf['jobs']} measured jobs per arm, {conf['rounds']} round(s), arms in fresh applications with the "
        f"same burst schedule. Delta = {conf['interval_ms']} ms, hold cap {conf['hold_cap']}.",
        "",
        markdown_table(["arm", "job p50 s", "job p99 s", "stage p50 s", "stage p99 s", "task-s", "spec. copies",
                        "job p99 / default", "job p99 / spec.", "task-s / spec.", "queue p50 s",
                        "delay % of task", "tasks on victim", "holds", "held s"], rows),
        "",
        "Task-seconds sum every task attempt, speculative copies included. Queue delay: task launch minus stage "
        "submission (median); delay overhead: its increase over default, as a % of the median task time. "
        "With this few jobs per arm, p99 is close to the maximum.",
        ""] + _rounds_section(s, conf) + _ceiling_section(data["runs"])
    if q:
        raw = next(iter(q.values()))
        qrows = [["raw SVM (score > 0)", raw["rows"], raw["stragglers"], raw["before_threshold"]["tpr"],
                  raw["before_threshold"]["fpr"], raw["before_threshold"]["precision"], raw["roc_auc"]]]
        qrows += [[f"thresholded ({label})", v["rows"], v["stragglers"], v["after_threshold"]["tpr"],
                   v["after_threshold"]["fpr"], v["after_threshold"]["precision"], v["roc_auc"]]
                  for label, v in q.items()]
        md += ["Prediction quality on held-out tasks (the default arm's, later in time than training):", "",
               markdown_table(["threshold", "tasks", "stragglers", "TPR", "FPR", "precision", "ROC AUC"], qrows),
               "", "Thesis reference: TPR about 80%, FPR about 30% (spec §4).", ""]
        counters = q.get("p=0.7", {}).get("counters", [])
        if counters:
            md += ["Counters that carried the ranking (held-out ROC AUC lost when the counter is shuffled; "
                   "counters with the same signal share it): " + ", ".join(
                       f"`{c['counter']}` {c['auc_drop']:.3f}" for c in counters) + ".", ""]
        victim = q.get("p=0.7", {}).get("per_node", {}).get(str(conf["victim"]))
        if victim:
            md += [f"The victim's own rows at p=0.7 ({victim['model']} model): TPR {victim['tpr']:.2f}, FPR "
                   f"{victim['fpr']:.2f}, {victim['tp']} of {victim['tp'] + victim['fn']} stragglers flagged"
                   f"{_auc_text(victim)}.", ""]
        per_node = q.get("p=0.7", {}).get("per_node", {})
        if any("roc_auc" in v for v in per_node.values()):
            md += ["ROC AUC of each node's own held-out rows: " + ", ".join(
                f"executor {node} {v.get('roc_auc', float('nan')):.2f} ({v['model']} model)"
                for node, v in per_node.items()) + ".", ""]
    fit = cost["fit_seconds"]
    pred = cost["predict_s_per_node"]
    md += [f"Cost: training {cost['train_total_s']:.2f} s in all (shared model {fit.get('shared', 0):.2f} s; per-node "
           f"models {', '.join(f'{k}: {v:.2f} s' for k, v in fit.items() if k != 'shared') or 'none'}); prediction "
           f"per node per Delta {1e3 * pred.get('p50', float('nan')):.3f} ms median, "
           f"{1e3 * pred.get('p99', float('nan')):.3f} ms p99 (thesis: about 1 s and well under 1 ms).", "",
           f"![Wrangler arms]({Path(json_path).with_suffix('.png').name})", ""]
    _plot(s, Path(json_path).with_suffix(".png"))
    return write_markdown(json_path, md)


def _auc_text(node: dict) -> str:
    return f", ROC AUC {node['roc_auc']:.2f}" if "roc_auc" in node else ""


def _burst_text(conf: dict) -> str:
    low, high = conf.get("burst_len", (3.0, 8.0))  # runs recorded before the option existed used 3-8 s
    return f"{low:g}-{high:g} s every {conf.get('burst_gap', 8.0):g} s on average"


def _cluster_text(conf: dict) -> str:
    if conf.get("cluster", "local") == "local":
        return f"`local-cluster[{conf['executors']},1,1024]` (one host: speculation cannot act)"
    if conf["cluster"] == "emulated":
        return (f"{conf['executors']} emulated hosts (`benchmarks.cluster`: a network namespace, CPU quota of "
                f"{conf['host_cpus']:g} cores, memory limit and {conf['iops']} IOPS each), one one-core executor on each")
    return (f"a standalone cluster of {conf['executors']} one-core workers, each on a loopback address of its own "
            f"(so speculative copies can run on another host)")


def _noise_text(conf: dict) -> str:
    if conf.get("cluster") == "emulated":
        def kinds(levels):
            return ", ".join(f"{k} {v:g}" for k, v in levels.items())
        return (f"executor {conf['victim']}'s host runs hogs inside its own groups in seeded random bursts of "
                f"{_burst_text(conf)}, each burst one of {kinds(conf['victim_levels'])} (cpu and io: processes; "
                f"memory: fraction of the host's limit held){_others_text(conf, kinds(conf['other_levels']))}")
    return (f"executor {conf['victim']} is starved to {100 * conf['share']:.0f}% of a core during seeded random "
            f"bursts of {_burst_text(conf)} ({conf['noise']}){_others_text(conf)}{_node_text(conf)}")


def _others_text(conf: dict, hogs: str | None = None) -> str:
    if conf.get("noisy_nodes") != "every":
        return ""
    low, high = conf["other_burst_len"]
    if hogs is not None:
        return (f"; every other executor's host runs one of {hogs} in bursts of {low:g}-{high:g} s every "
                f"{conf['other_burst_gap']:g} s on average, each on its own seed")
    return (f"; every other executor is starved to {100 * conf['other_share']:.0f}% of a core in bursts of "
            f"{low:g}-{high:g} s every {conf['other_burst_gap']:g} s on average, each on its own seed")


def _rounds_section(summary: dict, conf: dict) -> list[str]:
    """Per-round ratios to speculation with their 95% t-interval over rounds."""
    def cell(r):
        if not r:
            return "n/a"
        per = " ".join(f"{v:.2f}" for v in r["per_round"])
        if r["low"] is None:
            return f"{r['mean']:.3f} ({per})"
        return f"{r['mean']:.3f} [{r['low']:.2f}, {r['high']:.2f}] ({per})"

    out = []
    for base in ("speculation", "speculation-spark4"):
        key = f"rounds_vs_{base}"
        rows = [[arm, cell(v[key]["job_p99"]), cell(v[key]["task_seconds"]),
                 "yes" if (v[key]["job_p99"].get("high") or 2) < 1 else "no"]
                for arm, v in summary.items() if key in v and arm != base]
        if rows:
            out += [f"Per round against `{base}` (each arm against it in the same round; mean, 95% t-interval over "
                    f"{conf['rounds']} rounds, per-round values):", "",
                    markdown_table(["arm", f"job p99 / {base}", f"task-s / {base}", "p99 interval below 1"], rows), ""]
    return out


def _ceiling_section(runs: list) -> list[str]:
    """What share of the stragglers a launch-time predictor could foresee at all (default arm)."""
    base = [x for x in runs if x["arm"] == "default" and "stragglers" in x]
    stragglers = sum(x["stragglers"] for x in base)
    if not stragglers:
        return []
    foreseeable = sum(x["foreseeable_stragglers"] for x in base)
    return [f"Ceiling: of the default arm's {stragglers} stragglers, {foreseeable} "
            f"({100 * foreseeable / stragglers:.0f}%) were launched while their own node was in a burst, the only "
            "ones a reading of node counters at launch can foretell; the rest come from ordinary variation or "
            "from bursts that began after launch. No TPR above that share is possible here.", ""]


def _node_text(conf: dict) -> str:
    share = conf.get("node_share")
    return "" if share is None else f"; outside bursts every executor is capped at {share:g} cores (one node each)"


def _plot(summary: dict, png: Path) -> None:
    plt = pyplot()
    arms = list(summary)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, (title, values) in zip(axes, (
            ("job time s (p50 bar, p99 tick)", None),
            ("stage time s (p50 bar, p99 tick)", None),
            ("task-seconds", [summary[a]["task_seconds"] for a in arms]))):
        if values is None:
            key = "job" if title.startswith("job") else "stage"
            ax.bar(arms, [summary[a][key]["p50"] for a in arms])
            ax.plot(arms, [summary[a][key]["p99"] for a in arms], "k_", markersize=20)
        else:
            ax.bar(arms, values)
        ax.set_title(title, fontsize=9)
        ax.tick_params(axis="x", rotation=35, labelsize=7)
    save_figure(fig, png)


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(write_report(Path(arg)))
