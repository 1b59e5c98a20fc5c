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


def _best_so_far(trace) -> tuple:
    """``(seconds, best score so far)`` at every improvement of ``trace``, for a step plot."""
    times, best = [], []
    for t, score in trace:
        if not best or score > best[-1]:
            times.append(t)
            best.append(score)
    return times, best


def _stat(s, fmt: str) -> str:
    """``median [min, max]``, plus the mean's 95% t-interval when there are two values or more."""
    if not s:
        return "n/a"
    text = f"{s['median']:{fmt}} [{s['min']:{fmt}}, {s['max']:{fmt}}]"
    if s.get("low") is not None:
        text += f", mean {s['mean']:{fmt}} (95% CI {s['low']:{fmt}} to {s['high']:{fmt}})"
    return text + f", n={s['n']}"


def _keras_tuner_report(data: dict) -> tuple:
    meta, conf = data["meta"], data["meta"]["conf"]
    lines = _header(meta, "Repack: Keras Tuner's Hyperband against sparkrm's pack-aware Tuner")
    lines += [f"Hyperband R={conf['max_epochs']}, eta={conf['factor']}, one iteration, objective val_accuracy; "
              f"Keras Tuner {meta.get('keras_tuner') or 'not run'}. Both tuners build from the same "
              f"`build_fn(hp)` (benchmarks/repack/models.py `hp_build_fn`) on the same {conf.get('problem', 'digits')} "
              "split per seed (benchmarks/repack/problems.py); "
              "the order alternates by seed. Equal-accuracy level = the lower of the two bests; time to level = "
              "seconds from the start of the search to the first validation score at or above it; speed-up = "
              "Keras Tuner's time / sparkrm's. Wall ratio = Keras Tuner's whole search / sparkrm's.", ""]
    rows = []
    for s in data["seeds"]:
        for name in data["tuners"]:
            r = s["runs"][name]
            t = (s.get("time_to_level") or {}).get(name)
            rows.append([s["seed"], name, "yes" if s["order"][0] == name else "no", r["wall_s"],
                         f"{r['best_score']:.4f}", r["trials"], r["epochs"], "n/a" if t is None else f"{t:.1f}",
                         json.dumps({k: float(f"{v:.3g}") if isinstance(v, float) else v
                                     for k, v in r["best_hp"].items()}, default=str)])
    lines.append(markdown_table(["seed", "tuner", "first", "wall s", "best val accuracy", "trials",
                                 "val scores", "s to level", "best hyper-parameters"], rows))
    paired = [s for s in data["seeds"] if "level" in s]
    if paired:
        lines += ["", markdown_table(["seed", "equal-accuracy level", "speed-up to level", "wall ratio"], [
            [s["seed"], f"{s['level']:.4f}",
             "n/a" if s["speedup_to_level"] is None else f"{s['speedup_to_level']:.2f}x",
             f"{s['wall_ratio']:.2f}x"] for s in paired])]
    summary = data["summary"]
    lines += ["", "Summary over seeds, median [min, max]:", ""]
    if summary["speedup_to_level"]:
        lines.append(f"* speed-up to equal accuracy: {_stat(summary['speedup_to_level'], '.2f')}")
    if summary["wall_ratio"]:
        lines.append(f"* whole-run wall ratio: {_stat(summary['wall_ratio'], '.2f')}")
    if summary.get("reuse_speedup"):
        lines.append(f"* sparkrm-fresh's wall time over sparkrm's (traces not kept / kept): "
                     f"{_stat(summary['reuse_speedup'], '.2f')}")
    for name in data["tuners"]:
        lines.append(f"* {name}: wall s {_stat(summary['wall_s'][name], '.1f')}; "
                     f"best val accuracy {_stat(summary['best_score'][name], '.4f')}")

    def plot(ax):
        colors = {"keras-tuner": "tab:orange", "sparkrm": "tab:blue", "sparkrm-fresh": "tab:green"}
        styles = ["-", "--", ":", "-."]
        for i, s in enumerate(data["seeds"]):
            for name in data["tuners"]:
                trace = s["runs"][name]["trace"]
                if not trace:
                    continue
                times, best = _best_so_far(trace)
                end = trace[-1][0]
                ax.step(times + [max(end, s["runs"][name]["wall_s"])], best + [best[-1]], where="post",
                        color=colors[name], ls=styles[i % len(styles)], label=f"{name} seed {s['seed']}")
                t = (s.get("time_to_level") or {}).get(name)
                if t is not None:
                    ax.plot([t], [s["level"]], "o", color=colors[name], ms=4)
        ax.set_xlim(left=0)
        ax.set_xlabel("seconds since the search started")
        ax.set_ylabel("best val accuracy so far")
        ax.set_title(f"Hyperband R={conf['max_epochs']}, eta={conf['factor']} ({meta['device']})")
        ax.legend(fontsize=7)

    return lines, plot


def _hyperdrive_report(data: dict) -> tuple:
    meta, conf, base = data["meta"], data["meta"]["conf"], data["baseline"]
    lines = _header(meta, f"Repack: time to {data['target']} validation accuracy with HyperDrive's early termination")
    lines += [f"Pack-aware Hyperband (kNN) R={conf['max_epochs']}, eta={conf['factor']} on digits, the search ending "
              f"at the first validation accuracy >= {data['target']}; one run per variant and seed, the order "
              f"rotated by seed. Speed-up = {base}'s time to target / the variant's, paired by seed. A search that "
              "never reached the target counts its whole time (marked *).", ""]
    rows = []
    for v, summary in data["summary"].items():
        rows.append([v, f"{summary['reached']}/{len(data['runs'][v])}", _stat(summary["time_s"], ".1f"),
                     _stat(summary["speedup"], ".2f"), _stat(summary["trial_epochs"], ".0f"),
                     f"{sum(r['killed'] for r in data['runs'][v]) / len(data['runs'][v]):.1f}"])
    lines.append(markdown_table(["variant", "reached", "time to target s", f"speed-up vs {base}",
                                 "trial-epochs trained", "killed per search"], rows))
    lines += ["", markdown_table(["seed", *data["runs"]], [
        [runs[0]["seed"], *(f"{r['time_to_target_s']:.1f}" if r["reached"] else f"{r['wall_s']:.1f}*" for r in runs)]
        for runs in zip(*data["runs"].values())])]

    def plot(ax):
        names = list(data["runs"])
        for i, v in enumerate(names):
            values = data["speedup"][v]
            ax.plot([i] * len(values), values, "o", alpha=0.6)
        ax.axhline(1, color="grey", lw=0.8)
        ax.set_xticks(range(len(names)), names)
        ax.set_ylabel(f"speed-up to {data['target']} vs {base}")
        ax.set_title(f"time to target, R={conf['max_epochs']} ({meta['device']})")

    return lines, plot


def _executors_report(data: dict) -> tuple:
    meta, conf, arms = data["meta"], data["meta"]["conf"], data["arms"]
    where = conf.get("master") or "its own local-cluster[N,1,2048] per arm"
    lines = _header(meta, "Repack: the pack-aware Tuner on Spark executors")
    lines += [f"Hyperband R={conf['max_epochs']}, eta={conf['factor']}, objective val_accuracy, `hp_build_fn` on the "
              f"digits split of each seed; arms in an order rotated by seed. `spark-N`: `Tuner(spark=...)` on a fresh "
              f"application of N one-core executors ({where}); `local`: the same Tuner in the benchmark's process; "
              f"`keras-tuner-N`: Keras Tuner's distributed Hyperband, a chief and N workers each pinned to one core. "
              f"Timed: `search` alone. Ratio = the arm's wall time / {arms[0]}'s in the same seed. Same = the same "
              f"trials, epochs and scores (within 1e-4) as {arms[0]}. Time-to-level ratio = seconds until the arm first scores "
              f"the lower of its and {arms[0]}'s best accuracy (the level) / {arms[0]}'s seconds to it.", ""]
    rows = []
    for s in data["seeds"]:
        for arm in arms:
            r = s["runs"][arm]
            same = {True: "yes", False: "no", None: "n/a"}[s["same_as_first"][arm]]
            used = (f"{r['workers']} workers, {r['trials']} trials" if "workers" in r
                    else " ".join(sorted({p["executor"] for p in r["packs"]})) or "-")
            to_level = (s.get("ratio_to_level") or {}).get(arm)
            rows.append([s["seed"], arm, s["order"].index(arm) + 1, r["wall_s"], f"{s['ratio'][arm]:.2f}",
                         f"{r['best_score']:.4f}",
                         "n/a" if to_level is None else f"{to_level:.2f} ({s['level'][arm]:.4f})", same, used])
    lines.append(markdown_table(["seed", "arm", "ran", "wall s", "ratio", "best val accuracy",
                                 "time-to-level ratio (level)", "same", "executors used"], rows))
    summary = data["summary"]
    lines += ["", "Summary over seeds, median [min, max]:", ""]
    for arm in arms:
        lines.append(f"* {arm}: wall s {_stat(summary['wall_s'][arm], '.1f')}; ratio to {arms[0]} "
                     f"{_stat(summary['ratio'][arm], '.2f')}; time to the level both reach, ratio to {arms[0]} "
                     f"{_stat((summary.get('ratio_to_level') or {}).get(arm), '.2f')}; best val accuracy "
                     f"{_stat(summary['best_score'][arm], '.4f')}")
    for arm in arms:
        first = data["seeds"][0]["runs"][arm]
        if "groups" in first:
            lines.append(f"* packs per rung, {arm}, seed {data['seeds'][0]['seed']}: "
                         f"{[g['sizes'] for g in first['groups']]}")

    def plot(ax):
        for i, arm in enumerate(arms):
            walls = [s["runs"][arm]["wall_s"] for s in data["seeds"]]
            ax.scatter([i] * len(walls), walls, label=arm)
        ax.set_xticks(range(len(arms)), arms)
        ax.set_ylim(bottom=0)
        ax.set_ylabel("search wall seconds")
        ax.set_title(f"Hyperband R={conf['max_epochs']} on executors ({meta['device']})")

    return lines, plot


def render(path) -> Path:
    """Write ``<path>.md`` and ``<path>.png`` next to the JSON at ``path``; return the Markdown path."""
    plt = pyplot()
    path = Path(path)
    data = json.loads(path.read_text())
    lines, plot = {"impv": _impv_report, "hyperband": _hyperband_report,
                   "keras-tuner": _keras_tuner_report, "hyperdrive": _hyperdrive_report,
                   "executors": _executors_report}[data["kind"]](data)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    plot(ax)
    save_figure(fig, path.with_suffix(".png"), dpi=110)
    lines += ["", f"![plot]({path.with_suffix('.png').name})", ""]
    return write_markdown(path, lines)
