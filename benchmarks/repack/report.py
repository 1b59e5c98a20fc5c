"""Render a Repack benchmark JSON as Markdown and a PNG plot (from the JSON alone)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.common import markdown_table, pyplot, save_figure, write_markdown


def _header(meta: dict, title: str) -> list:
    framework = meta.get("framework") or f"TensorFlow {meta['tensorflow']} · Keras {meta['keras']}"
    return [f"# {title}", "", f"{meta['date']} · commit {meta['git_sha']} · {framework} · "
            f"{meta['device']} · {meta['machine']['cpus']} CPUs", "",
            f"Arguments: `{json.dumps({k: v for k, v in meta['conf'].items() if k != 'func'}, default=str)}`", ""]


def _impv_report(data: dict) -> tuple:
    lines = _header(data["meta"], "Repack: IMPV against the number of packed models")
    xla = bool(data["results"]) and data["results"][0].get("memory_kind") == "xla_step_analysis"
    memory = ("Memory is XLA's compiled analysis of one step (arguments + outputs + temporaries)." if xla
              else "Peak memory is TensorFlow's allocator peak on the GPU (n/a on CPU).")
    lines += ["T_s are median step times (ms) over the repeats, first step of each run dropped; IMPV = "
              "(T_s(Seq) - T_s(Pack)) / T_s(Seq), median [min, max] over repeats (baseline and pack "
              "interleaved). T_s(Seq) Keras fit: each model alone stepped by Keras's own model.fit "
              "(one fit of at least 50 steps per repeat, epoch set-up included; n/a when not run with "
              "--keras). " + memory, ""]
    rows = []
    for r in data["results"]:
        for v, t in r["t_pack"].items():
            s = r["impv_spread"][v]
            peak = r["peak_bytes"].get(v)
            peak_seq = r["peak_bytes"].get("models") or []
            keras = r.get("t_seq_keras")
            rows.append([r["model"], r["n_models"], v, r["t_seq"] * 1e3, t * 1e3, r["t_seq"] / t,
                         "n/a" if keras is None else f"{keras * 1e3:.3g} ({keras / t:.2f}x)",
                         f"{s['median']:+.1%} [{s['min']:+.1%}, {s['max']:+.1%}]",
                         "n/a" if peak is None else f"{peak / 2**20:.1f}",
                         "n/a" if not peak_seq or peak_seq[0] is None else f"{sum(peak_seq) / 2**20:.1f}"])
    lines.append(markdown_table(["model", "n", "variant", "T_s(Seq) ms", "T_s(Pack) ms", "speed-up",
                                 "T_s(Seq) Keras fit ms (speed-up)", "IMPV",
                                 "peak pack MiB", "sum of peaks alone MiB"], rows))
    if data.get("swoh"):
        lines += ["", "Switching overhead, one epoch each (s): SwOH(n) = T_e(Seq) - sum T_e(Model i)", ""]
        lines.append(markdown_table(["model", "T_e(Seq)", "T_e(Model i)", "SwOH", "SwOH / T_e(Seq)"], [
            [k, s["t_e_seq"], ", ".join(f"{t:.3g}" for t in s["t_e_models"]), s["swoh"], f"{s['swoh_share']:.1%}"]
            for k, s in data["swoh"].items()]))

    def plot(ax):
        for model in sorted({r["model"] for r in data["results"]}):
            mine = [r for r in data["results"] if r["model"] == model]
            for v in sorted({v for r in mine for v in r["t_pack"]}):
                pts = [(r["n_models"], r["impv_spread"][v]) for r in mine if v in r["t_pack"]]
                ax.errorbar([p[0] for p in pts], [100 * p[1]["median"] for p in pts],
                            yerr=[[100 * (p[1]["median"] - p[1]["min"]) for p in pts],
                                  [100 * (p[1]["max"] - p[1]["median"]) for p in pts]],
                            marker="o", capsize=3, label=f"{model} {v}")
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("packed models")
        ax.set_ylabel("IMPV (%)")
        ax.set_title(f"IMPV vs packed models ({data['meta']['device']})")
        ax.legend()

    return lines, plot


def _hyperband_report(data: dict) -> tuple:
    lines = _header(data["meta"], "Repack: pack-aware Hyperband against plain Hyperband")
    base = data["baseline"]
    lines += [f"Wall time of a whole Hyperband run per packing strategy; speed-up = {base} time / strategy time "
              "within the same repeat (order rotated each repeat). Median [min, max].", ""]
    rows = []
    for v in [base] + [v for v in data["meta"]["conf"]["variants"] if v != base]:
        runs = data["runs"][v]
        w, s, b = data["wall_s"][v], data["speedup"][v], data["best_score"][v]
        sizes = [size for g in runs[0]["groups"] for size in g["sizes"]]
        rows.append([v, f"{w['median']:.1f} [{w['min']:.1f}, {w['max']:.1f}]",
                     f"{s['median']:.2f}x [{s['min']:.2f}, {s['max']:.2f}]",
                     f"{b['median']:.4f} [{b['min']:.4f}, {b['max']:.4f}]", len(sizes),
                     f"{sum(sizes) / len(sizes):.2f}", json.dumps(runs[0]["best_config"])])
    lines.append(markdown_table(["packing", "wall s", "speed-up", "best val accuracy", "packs trained",
                                 "mean pack size", "best config (repeat 0)"], rows))

    def plot(ax):
        names = [base] + [v for v in data["meta"]["conf"]["variants"] if v != base]
        med = [data["wall_s"][v]["median"] for v in names]
        ax.bar(names, med, color=["grey"] + ["tab:blue"] * (len(names) - 1))
        for i, v in enumerate(names):
            ax.text(i, med[i], f"{data['speedup'][v]['median']:.2f}x\nacc {data['best_score'][v]['median']:.3f}",
                    ha="center", va="bottom", fontsize=8)
        ax.set_ylabel("wall time of the search (s)")
        ax.set_title(f"Hyperband R={data['meta']['conf']['max_epochs']}, eta={data['meta']['conf']['factor']} "
                     f"({data['meta']['device']})")

    return lines, plot


def render(path) -> Path:
    """Write ``<path>.md`` and ``<path>.png`` next to the JSON at ``path``; return the Markdown path."""
    plt = pyplot()
    path = Path(path)
    data = json.loads(path.read_text())
    lines, plot = {"impv": _impv_report, "hyperband": _hyperband_report}[data["kind"]](data)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    plot(ax)
    save_figure(fig, path.with_suffix(".png"), dpi=110)
    lines += ["", f"![plot]({path.with_suffix('.png').name})", ""]
    return write_markdown(path, lines)
