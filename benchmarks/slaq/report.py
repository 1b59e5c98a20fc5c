"""Markdown and PNG report of the SLAQ benchmark, rendered from its JSON alone."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.common import cluster_label, markdown_table, pyplot, report_header, save_figure, write_markdown


def _ratio(a, b):
    return None if a is None or not b else a / b


def _cell(v, fmt="{:.1f}"):
    return "-" if v is None else fmt.format(v)


def write_report(json_path: Path) -> Path:
    data = json.loads(Path(json_path).read_text())
    conf, runs = data["meta"]["conf"], data["runs"]
    rows = []
    for load, by_policy in runs.items():
        fair = by_policy.get("fair", {}).get("summary")
        for policy, run in by_policy.items():
            s = run["summary"]
            vs = (lambda key: "" if fair is None or policy == "fair"
                  else f" ({_cell(_ratio(s[key], fair[key]), '{:.2f}')}x fair)")
            rows.append([f"{float(load):g} s", policy, _cell(s["time_to_90_s"]) + vs("time_to_90_s"),
                         _cell(s["time_to_95_s"]) + vs("time_to_95_s"),
                         _cell(s["avg_normalized_loss"], "{:.3f}") + vs("avg_normalized_loss"),
                         _cell(s["makespan_s"]), f"{run['decision_ms']['median']:.1f} / {run['decision_ms']['max']:.1f}"])
    error_rows = [[kind, *(f"{_cell(e[h]['fit'], '{:.1%}')} / {_cell(e[h]['strawman'], '{:.1%}')}" for h in e)]
                  for kind, e in {**data["prediction_errors"], **data["synthetic_prediction_errors"]}.items()]
    horizons = list(next(iter(data["prediction_errors"].values())))
    scaling = [[kind, f"{s['1']['wall_s'] * 1000:.0f}", f"{s['2']['wall_s'] * 1000:.0f}", f"{s['speedup']:.2f}",
                f"{s['1']['cpu_s'] * 1000:.0f} / {s['2']['cpu_s'] * 1000:.0f}"]
               for kind, s in data["runtime_scaling"].items()]
    dt = data["decision_time"]
    md = report_header(data["meta"], "SLAQ: quality-driven cores vs the fair share") + [
        f"{conf['jobs']} jobs per run (logistic regression and linear SVM by gradient descent, linear regression "
        f"by L-BFGS, K-Means; {conf['rows']} generated rows each), Poisson arrivals, {data['cores']} cores "
        f"(`{cluster_label(conf)}`, FAIR pools), {conf['epoch']:g} s epochs, seed {conf['seed']}. "
        "Every policy ran the same jobs one run after another in one application. Time to X%: from arrival until "
        "the job's loss had X% of its total reduction; normalized loss (L - L_final) / (L_0 - L_final), averaged "
        "over the jobs active at each 0.5 s tick, then over the run.", "",
        markdown_table(["mean gap", "policy", "time to 90% s", "time to 95% s", "avg normalized loss",
                        "makespan s", "decision ms median / max"], rows), "",
        "Loss prediction error h iterations ahead, weighted curve fit / strawman (|L_pred - L_true| over the "
        "true reduction from the first loss; mean over every point with 5 points behind it):", "",
        markdown_table(["job kind", *(f"h = {h}" for h in horizons)], error_rows), "",
        "Runtime model c*S/N: one job of each kind pinned to 1 then 2 cores (median of 7 iterations):", "",
        markdown_table(["job kind", "1 core ms", "2 cores ms", "speedup", "CPU ms per iteration (1 / 2 cores)"],
                       scaling), "",
        f"Allocator: {dt['jobs']} jobs on {dt['cores']} cores, Objective A decision in "
        f"{dt['allocate_s']['median'] * 1000:.0f} ms (median of 5, max {dt['allocate_s']['max'] * 1000:.0f} ms); "
        f"forecasting all {dt['jobs']} jobs from scratch took {dt['forecast_all_s']:.1f} s (in the live loop a "
        "forecast is refit only when its job reports).", "",
        f"![average normalized loss]({Path(json_path).with_suffix('.png').name})", ""]
    _plot(runs, Path(json_path).with_suffix(".png"))
    return write_markdown(json_path, md)


def _plot(runs: dict, path: Path) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(runs), figsize=(4.5 * len(runs), 3.6), squeeze=False, sharey=True)
    for ax, (load, by_policy) in zip(axes[0], runs.items()):
        for policy, run in by_policy.items():
            curve = run["summary"]["curve"]
            ax.plot(curve["t"], [float("nan") if v is None else v for v in curve["avg_normalized_loss"]],
                    label=policy, linewidth=1.2)
        ax.set_title(f"mean gap {float(load):g} s")
        ax.set_xlabel("time (s)")
    axes[0][0].set_ylabel("avg normalized loss of active jobs")
    axes[0][0].legend()
    save_figure(fig, path, dpi=110)
