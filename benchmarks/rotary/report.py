"""Markdown and PNG reports of the Rotary benchmarks, rendered from their JSON alone."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from benchmarks.common import (cluster_label, interval, markdown_table, pyplot, report_header, save_figure,
                               write_markdown)

KINDS = ("light", "medium", "heavy")
WORST = 5  # the worst jobs averaged in "worst 5 progress"


def write_time_to_accuracy_report(json_path: Path) -> Path:
    data = json.loads(Path(json_path).read_text())
    conf, queries = data["meta"]["conf"], data["queries"]

    def cell(entry):
        return "not reached" if entry["of_exact"] is None else f"{entry['of_exact']:.2f} ({entry['fraction_of_data']:.0%} of data)"

    rows = [[f"Q{q}", r["exact_s"], r["progressive_total_s"], cell(r["time_to_95"]), cell(r["time_to_99"])]
            for q, r in queries.items()]
    md = report_header(data["meta"], "Rotary: time to accuracy of progressive TPC-H queries") + [
        f"SF {conf['sf']:g}, {conf['batches']} batches, `{cluster_label(conf)}`. Exact time: the "
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


def summarize(records: list[dict], batches: int, memory_bytes: float = float("inf")) -> dict:
    """Attained per class, false attainments, waiting times and the worst-served jobs of one policy's run
    (among the jobs that fit ``memory_bytes``, the budget: a larger one never runs under any policy)."""
    out = {f"attained_{k}": sum(r["status"] == "attained" for r in records if r["kind"] == k) for k in KINDS}
    out.update({f"jobs_{k}": sum(r["kind"] == k for r in records) for k in KINDS})
    out["attained"] = sum(r["status"] == "attained" for r in records)
    out["false_attainments"] = sum(r["false_attainment"] for r in records)
    out["avg_waiting_s"] = statistics.mean(r["waiting_vs_alone_s"] for r in records) if records else 0.0
    out["avg_true_accuracy"] = statistics.mean(r["true_accuracy"] for r in records) if records else 0.0
    out["memory_waits"] = sum(r.get("memory_waits", 0) for r in records)
    runnable = [r for r in records if r["memory_bytes"] <= memory_bytes]
    progress = sorted(job_progress(r) for r in runnable)
    out["worst_progress"] = progress[0] if progress else 0.0
    out[f"worst{WORST}_progress"] = statistics.fmean(progress[:WORST]) if progress else 0.0
    share = sorted(1.0 if r["status"] == "attained" else r["batches_done"] / batches for r in runnable)
    out[f"worst{WORST}_batches"] = statistics.fmean(share[:WORST]) if share else 0.0
    out["never_ran"] = sum(r["epochs"] == 0 for r in runnable)
    return out


def job_progress(record: dict) -> float:
    """How far a job got toward its criterion by its end: 1 if attained, else its estimate over its threshold
    (a job that misses ends at its deadline, so this is its progress by then)."""
    if record["status"] == "attained":
        return 1.0
    return min(1.0, record["estimate"] / record["threshold"]) if record["threshold"] else record["estimate"]


def attainable_alone(jobs: list[dict], alone: dict) -> dict:
    """Per class, how many jobs meet their criterion before their deadline when run alone."""
    out = {}
    for k in KINDS:
        mine = [j for j in jobs if j["kind"] == k]
        out[k] = (sum(alone_time(alone[str(j["query"])], j["threshold"]) <= j["deadline_s"] for j in mine), len(mine))
    return out


def alone_time(points, threshold: float) -> float:
    """When a job alone meets its criterion: its envelope reaching the threshold, or the end of its run."""
    return next((elapsed for elapsed, estimate in points if estimate >= threshold), points[-1][0])


def write_workload_report(json_path: Path) -> Path:
    data = json.loads(Path(json_path).read_text())
    conf, runs = data["meta"]["conf"], data["runs"]
    seeds = list(runs)
    policies = sorted(runs[seeds[0]], key=lambda name: runs[seeds[0]][name].get("position", 0))
    budget_bytes = conf["memory_mb"] * 1e6 if conf.get("memory_mb") else float("inf")
    per_seed = {name: [summarize(runs[seed][name]["records"], conf["batches"], budget_bytes) for seed in seeds]
                for name in policies}

    def mean_interval(name, key, digits=1):
        return _mean_interval([float(s[key]) for s in per_seed[name]], digits)

    rows = []
    for name in policies:
        overhead = statistics.fmean(runs[seed][name]["overhead_s"] / runs[seed][name]["wall_s"] for seed in seeds)
        rows.append([name, mean_interval(name, "attained")] + [mean_interval(name, f"attained_{k}") for k in KINDS]
                    + [sum(s["false_attainments"] for s in per_seed[name]),
                       statistics.fmean(s["avg_waiting_s"] for s in per_seed[name]),
                       sum(s["memory_waits"] for s in per_seed[name]),
                       max(runs[seed][name].get("peak_memory_bytes", 0.0) for seed in seeds) / 1e6,
                       sum(len(runs[seed][name].get("epochs_over_grant", [])) for seed in seeds),
                       f"{100 * overhead:.2f}%"])
    seed_rows = [[name] + [per_seed[name][i]["attained"] for i in range(len(seeds))] for name in policies]
    alone_rows = [[seed] + [f"{a}/{n}" for a, n in attainable_alone(data["workloads"][seed], data["alone"]).values()]
                  for seed in seeds]
    budget = f"{conf['memory_mb']:g} MB" if conf.get("memory_mb") else "none"
    md = report_header(data["meta"], f"Rotary: {conf['jobs']} approximate jobs ({conf['mix']}) under each policy") + [
        f"SF {conf['sf']:g}, {conf['batches']} batches, {conf['cores']} cores arbitrated every {conf['epoch_s']:g} s "
        f"(`{cluster_label(conf, conf.get('executor_cores', 1))}`, FAIR pools); workload seeds "
        f"{', '.join(seeds)} (one workload each, policy order reversed on every other seed), times x "
        f"{conf['time_scale']:g} of Table 3.1; envelope window {conf['window']}; memory budget {budget}.", "",
        "Jobs attained, mean over seeds with its 95% t-interval:", "",
        markdown_table(["policy", "attained", "light", "medium", "heavy", "false attainments (all seeds)",
                        "avg waiting s", "memory waits", "peak memory MB", "epochs over their cores",
                        "scheduler overhead"], rows), "",
        "Attained: the envelope estimate reached the threshold (or every batch was processed) before the "
        "deadline. False attainment: attained, but the true accuracy at that moment was below the threshold. "
        "Waiting: turnaround minus the time the same job needs alone to meet its criterion. Memory waits: "
        "arbitrations a job sat out because its estimated memory did not fit the budget left; peak memory: "
        "the most estimated memory granted at once. Epochs over their cores: job epochs whose tasks ran more "
        "at once than the cores granted (task records, all seeds).", "",
        "Per seed (jobs attained):", "", markdown_table(["policy"] + [f"seed {s}" for s in seeds], seed_rows), "",
        "The worst-served jobs, mean over seeds with its 95% t-interval, among the jobs that fit the memory "
        "budget (a larger one never runs). A job's progress is 1 if it attained, "
        "else its estimate over its threshold when it ended (at its deadline; the envelope estimate is 0 until a "
        f"few batches are in); its batches: 1 if it attained, else the fraction of its {conf['batches']} batches "
        "it processed:", "",
        markdown_table(["policy", "worst job's progress", f"worst {WORST} jobs' progress",
                        f"worst {WORST} jobs' batches", "jobs never run"],
                       [[name, mean_interval(name, "worst_progress", 2), mean_interval(name, f"worst{WORST}_progress", 2),
                         mean_interval(name, f"worst{WORST}_batches", 2), mean_interval(name, "never_ran")]
                        for name in policies]), "",
        *_paired_comparisons(per_seed),
        "Jobs that meet their criterion before their deadline when run alone (light, medium, heavy):", "",
        markdown_table(["seed", "light", "medium", "heavy"], alone_rows), "",
        f"![attained jobs]({Path(json_path).with_suffix('.png').name})", ""]
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.8))
    width = 0.8 / len(KINDS)
    for i, k in enumerate(KINDS):
        means = [statistics.fmean(s[f"attained_{k}"] for s in per_seed[n]) for n in policies]
        errors = [_half_width(per_seed[n], f"attained_{k}") for n in policies]
        ax.bar([x + i * width for x in range(len(policies))], means, width, yerr=errors, capsize=3, label=k)
    ax.set_xticks([x + width for x in range(len(policies))], policies, fontsize=8)
    ax.set_ylabel(f"attained jobs (mean of {len(seeds)} seeds)")
    ax.legend()
    save_figure(fig, Path(json_path).with_suffix(".png"), dpi=110)
    return write_markdown(json_path, md)


def _mean_interval(values: list[float], digits: int) -> str:
    iv = interval(values)
    return f"{iv['mean']:.{digits}f}" + ("" if iv["low"] is None else f" [{iv['low']:.{digits}f}, {iv['high']:.{digits}f}]")


def _pairs(names: list[str]) -> list[tuple[str, str, str]]:
    """The pairs of policies that ran to compare seed by seed: max-min against max-sum over the same utilities
    (``utility-min`` and ``utility-sum``, and their ``-progress`` forms), and a policy run again under a label
    (``utility-sum@again`` against ``utility-sum``: the A/A spread)."""
    pairs = []
    for name in names:
        maxsum = name.replace("utility-min", "utility-sum")
        if name.startswith("utility-min") and maxsum in names:
            pairs.append((name, maxsum, f"Max-min minus max-sum (`{name}` minus `{maxsum}`, the same utilities)"))
        policy = name.partition("@")[0]
        if policy != name and policy in names:
            pairs.append((name, policy, f"A/A (`{name}` minus `{policy}`, the same policy run again)"))
    return pairs


def _paired_comparisons(per_seed: dict) -> list[str]:
    """Per pair of :func:`_pairs`, the first's worst-served jobs and attained jobs minus the second's, per seed."""
    lines = []
    for first, second, title in _pairs(list(per_seed)):
        rows = []
        for key, label, digits in (("worst_progress", "worst job's progress", 2),
                                   (f"worst{WORST}_progress", f"worst {WORST} jobs' progress", 2),
                                   (f"worst{WORST}_batches", f"worst {WORST} jobs' batches", 2),
                                   ("never_ran", "jobs never run", 1), ("attained", "jobs attained", 1)):
            diffs = [float(a[key] - b[key]) for a, b in zip(per_seed[first], per_seed[second])]
            rows.append([label, " ".join(f"{d:+.{digits}f}" for d in diffs), _mean_interval(diffs, digits)])
        lines += [f"{title}, per seed and mean [95% interval]:", "",
                  markdown_table(["", "per seed", "mean [95% interval]"], rows), ""]
    return lines


def _half_width(summaries: list[dict], key: str) -> float:
    iv = interval([float(s[key]) for s in summaries])
    return 0.0 if iv["low"] is None else iv["mean"] - iv["low"]


def write_suspend_report(json_path: Path) -> Path:
    data = json.loads(Path(json_path).read_text())
    conf, runs = data["meta"]["conf"], data["runs"]
    smallest, largest = f"{min(conf['sfs']):g}", f"{max(conf['sfs']):g}"

    rows = []
    for r in runs.values():
        req, cut, model = r["requested"], r["cancelled"], r["cost_model"]
        small = runs.get(f"{smallest}/{r['query']}")
        growth = (r["half_state"]["bytes"] / small["half_state"]["bytes"]
                  if small and f"{r['sf']:g}" == largest else None)
        rows.append([f"Q{r['query']}", f"{r['sf']:g}", r["total_s"], _lag(req), _lag(cut),
                     cut.get("discarded_s", "-"), r["half_state"]["groups"], r["half_state"]["bytes"] / 1e3,
                     f"{growth:.2f}x" if growth else "", cut.get("resume_to_end_s", "-"),
                     "yes" if req["same_answer"] and cut["same_answer"] else "**no**",
                     (f"suspended after {model['batches_done']} batches ({model['elapsed_s'] / r['total_s']:.0%} of T)"
                      if model["suspended"] else "ran through"),
                     "yes" if model["same_answer"] else "**no**"])
    md = report_header(data["meta"], "Rotary: Riveter's suspension of progressive queries") + [
        f"SF {', '.join(f'{s:g}' for s in conf['sfs'])}, {conf['batches']} batches, chunk growth {conf['growth']:g}, "
        f"`{cluster_label(conf)}`. Each query ran once uninterrupted (T, its processing "
        f"time), once with a suspension requested at {conf['at']:.0%} of T and resumed at once with "
        f"{conf['resume_partitions']} shuffle partitions (suspended with {conf['suspended_partitions']}), and once "
        "under the cost model with a termination window [0.5 T, 0.9 T] of probability 0.3. Disk measured at "
        f"{conf['disk']['write_bps'] / 1e6:.0f} MB/s write, {conf['disk']['read_bps'] / 1e6:.0f} MB/s read.", "",
        markdown_table(["query", "SF", "T s", "lag waiting s (batches done)", "lag cancelling s (batches done)",
                        "discarded s", "groups at 50%", "state at 50% KB", f"state SF {largest} / SF {smallest}",
                        "resume to end s", "same answer", "cost model", "same answer"], rows), "",
        "Lag: from the request to the state on disk. Waiting: the Spark query running at the time (a chunk of "
        "batches) ends first; cancelling: it is cancelled, its work (discarded) is done again after resuming. "
        "State: the checkpoint after half the batches (the same batches at every SF). Resume to end: the "
        "cancelling run. Finished first: the request came during the last Spark query, which ran to the end "
        "(the lag shown is the time to that end). Same answer: the resumed runs' final answers equal "
        "the uninterrupted one's.", ""]
    return write_markdown(json_path, md)


def _lag(run: dict) -> str:
    if not run["suspended"]:
        return f"finished first ({run['lag_s']:.2f})" if "lag_s" in run else "finished before the request"
    return f"{run['lag_s']:.2f} ({run['batches_done']})"
