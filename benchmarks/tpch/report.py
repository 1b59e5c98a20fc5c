"""The harness's outputs: ``results.json``, ``report.md`` and ``report.png``.

``results.json`` (``schema_version`` 1) holds:

* ``meta``: date, git commit, Python/pyspark/Java versions, machine;
* ``config``: scale factor, parts, queries, modes, master, repeat, the Spark
  settings every mode shared (``session_conf``), the data set folder;
* ``queries``: per query number, ``modes`` -> {``wall_s`` (timed runs, seconds),
  ``min_s``, ``median_s``, ``harness_s`` (telemetry reads and bookkeeping per
  run), ``metrics`` (``tasks``, ``shuffle_write_bytes``, ``shuffle_read_bytes``,
  ``shuffle_local_blocks``, ``shuffle_remote_blocks``, ``shuffle_read_requests`` (Spark's
  fetched-block counters), ``shuffle_fetch_wait_ms``, ``spill_bytes``, and in modes running
  Riffle ``riffle_reads`` and ``riffle_vanilla_reads`` (reads its reader issued, and those stock
  Spark would have issued for the same blocks); null in mode ``bare``),
  ``validated``, ``rows``, and in the ``rotary`` mode, for queries it answers
  progressively, ``progressive`` (per timed run ``first_s``, ``accuracy95_s``, ``final_s``: seconds
  to the first estimate, to 95% true accuracy and to the exact answer; ``quarter_accuracy``: true accuracy
  after a quarter of the batches) and their
  ``progressive_median_s``}, the ``baseline`` mode and ``ratio_to_baseline`` (median over median);
* ``summary``: per mode ``geomean_ratio`` (geometric mean over queries of the
  ratio to the baseline), ``total_median_s`` and ``harness_overhead`` (harness
  time over query time).

The Markdown and PNG are rendered from the JSON alone.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

from benchmarks.common import geomean_interval, markdown_table, pyplot, save_figure, write_json

SCHEMA_VERSION = 1


def summarize(results: dict) -> dict:
    """Per-mode totals and the geometric mean of per-query ratios to the baseline."""
    modes = results["config"]["modes"]
    queries = results["queries"].values()
    summary = {}
    for m in modes:
        ratios = [q["ratio_to_baseline"][m] for q in queries]
        wall = sum(sum(q["modes"][m]["wall_s"]) for q in queries)
        harness = sum(sum(q["modes"][m]["harness_s"]) for q in queries)
        summary[m] = {"geomean_ratio": math.exp(sum(math.log(r) for r in ratios) / len(ratios)),
                      "total_median_s": sum(q["modes"][m]["median_s"] for q in queries),
                      "harness_overhead": harness / wall if wall else 0.0}
        metrics = [q["modes"][m]["metrics"] or {} for q in queries]
        if any(x.get("riffle_reads") is not None for x in metrics):
            summary[m]["riffle_reads"] = sum(x.get("riffle_reads", 0) for x in metrics)
            summary[m]["riffle_vanilla_reads"] = sum(x.get("riffle_vanilla_reads", 0) for x in metrics)
    return summary


def headline(results: dict) -> list[str]:
    """What each mode buys over the baseline, in a few lines a person reads in ten seconds.

    Time: the geometric mean over queries of each query's ratio to the baseline, with a 95% t-interval over
    queries; shuffle reads: what Riffle's reader issued against what Spark would have; progressive answers:
    over the queries answered so, the median fraction of the baseline's time to the first estimate and to a
    95%-accurate one (the time to the exact answer is the first line's).
    """
    modes, queries = results["config"]["modes"], results["queries"]
    base = next(iter(queries.values()))["baseline"]
    summary = summarize(results)
    lines = [f"TPC-H SF {results['config']['sf']:g}, {len(queries)} queries"
             f"{', every answer checked against DuckDB' if results['config']['validate'] else ''}:"]
    others = [m for m in modes if m != base]
    width = max(map(len, others), default=0) + 2
    for m in others:
        ci = geomean_interval([q["ratio_to_baseline"][m] for q in queries.values()])
        spread = "" if ci["low"] is None else f"; 95% interval {ci['low']:.2f}-{ci['high']:.2f}"
        parts = [f"time to the exact answer {ci['geomean']:.2f}x {base}'s (geomean over queries{spread})"]
        if "riffle_reads" in summary[m]:
            parts.append(f"shuffle reads issued / Spark would: {_reads_summary(summary[m])}")
        parts.append(_progressive_fractions(queries, m, base))
        lines += [f"  {(m if i == 0 else ''):<{width}}{part}" for i, part in enumerate(p for p in parts if p)]
    return lines


def _progressive_fractions(queries: dict, mode: str, base: str) -> str:
    fractions = {k: [] for k in ("first_s", "accuracy95_s")}
    for entry in queries.values():
        times = entry["modes"][mode].get("progressive_median_s")
        for key, values in fractions.items():
            if times and times[key] is not None:
                values.append(times[key] / entry["modes"][base]["median_s"])
    first, reached = fractions["first_s"], fractions["accuracy95_s"]  # every progressive query has a first
    if not first:
        return ""
    median = statistics.median
    accurate = f"95% accurate at {median(reached):.2f}x ({len(reached)} of them)" if reached else "never 95% accurate"
    return (f"{len(first)} queries answered progressively (medians): first estimate at {median(first):.2f}x "
            f"{base}'s time, {accurate}")


def write_outputs(out_dir: Path, results: dict, meta: dict) -> dict:
    """Write the three files into ``out_dir``; return the paths."""
    payload = {"schema_version": SCHEMA_VERSION, "meta": meta, **results, "summary": summarize(results)}
    # Query numbers become JSON object keys (strings); render from the written form.
    payload = json.loads(json.dumps(payload))
    paths = {"json": write_json(out_dir / "results.json", payload),
             "md": out_dir / "report.md", "png": out_dir / "report.png"}
    paths["md"].write_text(render_markdown(payload))
    render_png(payload, paths["png"])
    return paths


def render_markdown(data: dict) -> str:
    meta, cfg, summary = data["meta"], data["config"], data["summary"]
    modes = cfg["modes"]
    base = next(iter(data["queries"].values()))["baseline"]
    others = [m for m in modes if m != base]
    head = [
        f"# TPC-H SF {cfg['sf']:g}: {', '.join(modes)}",
        "",
        f"{meta['date']} · commit {meta['git_sha']} · pyspark {meta['pyspark']} · {meta['java']} · "
        f"{meta['machine']['cpus']} CPUs, {meta['machine']['memory_gib']} GiB",
        "",
        f"Master `{cfg['master']}`; data: {cfg['parts']} Parquet files per table; "
        f"{cfg['repeat']} timed run(s) per query and mode, {_warmups(cfg)} "
        f"({'validated against DuckDB' if cfg['validate'] else 'not validated'}). Modes interleaved query by "
        "query. Spark settings: " + ", ".join(f"`{k}={v}`" for k, v in sorted(cfg["session_conf"].items())) + ".",
        "",
        "## Summary",
        "",
        *(["```", *headline(data), "```", ""] if others else []),
        markdown_table(["mode", "sum of medians s", f"geomean ratio to {base}", "harness overhead",
                        "shuffle reads / Spark would"],
                       [[m, summary[m]["total_median_s"], summary[m]["geomean_ratio"],
                         f"{100 * summary[m]['harness_overhead']:.2f}%", _reads_summary(summary[m])] for m in modes]),
        "",
        "## Per query",
        "",
        "Times are medians of the timed runs; reads are shuffle block reads (local + remote).",
        "",
    ]
    riffle_modes = [m for m in modes if any((q["modes"][m]["metrics"] or {}).get("riffle_reads") is not None
                                            for q in data["queries"].values())]
    headers = ["Q", "rows"] + [f"{m} s" for m in modes] + [f"{m}/{base}" for m in others] + \
        [f"{m} reads" for m in modes] + [f"{m}: reads / Spark would" for m in riffle_modes] + \
        [f"{m} shuffle MB" for m in modes] + [f"{m} spill MB" for m in modes]
    rows = []
    for q, entry in sorted(data["queries"].items(), key=lambda kv: int(kv[0])):
        per = entry["modes"]
        rows.append([f"Q{int(q)}", per[modes[0]]["rows"] if per[modes[0]]["rows"] is not None else "-"]
                    + [per[m]["median_s"] for m in modes]
                    + [entry["ratio_to_baseline"][m] for m in others]
                    + [_metric(per[m], "shuffle_read_requests") for m in modes]
                    + [_riffle_reads(per[m]) for m in riffle_modes]
                    + [_metric(per[m], "shuffle_write_bytes", 2**20) for m in modes]
                    + [_metric(per[m], "spill_bytes", 2**20) for m in modes])
    png = "![per-query chart](report.png)"
    notes = ["", "Reads: Spark's fetched-block counters (a batch of contiguous blocks counts once). "
             "\"reads / Spark would\": shuffle reads Riffle's reader issued, and those stock Spark would "
             "have issued for the same blocks (from its read records): one per block, or with batch fetch one per "
             "map output and executor. That is a lower bound: Spark also splits a batch that crosses a fetch "
             "request's size limit, which Riffle's reads then include."] if riffle_modes else []
    return "\n".join(head + [markdown_table(headers, rows)] + notes + _progressive_section(data, base) + ["", png, ""])


def _bar_label(data: dict, mode: str) -> str:
    reads = data.get("summary", {}).get(mode, {})
    return f"{mode} (shuffle reads {_reads_summary(reads)})" if "riffle_reads" in reads else mode


def _mark_progressive(ax, items, mode: str, xs, scale) -> None:
    """The first estimate and the 95%-accurate answer of each progressively answered query, on its bar."""
    for key, marker, fill, label in (("first_s", "v", "black", "first estimate"),
                                     ("accuracy95_s", "o", "white", "95% accurate")):
        points = [(x, (e["modes"][mode].get("progressive_median_s") or {}).get(key), s)
                  for x, (_, e), s in zip(xs, items, scale)]
        points = [(x, t / s) for x, t, s in points if t is not None]
        if points:
            ax.scatter(*zip(*points), marker=marker, s=26, facecolors=fill, edgecolors="black", zorder=3,
                       label=f"{mode}: {label}")


def _progressive_section(data: dict, base: str) -> list[str]:
    """Per query answered progressively: its times to the first estimate, to 95% true accuracy and to the
    exact answer, each also as a fraction of the baseline's plain query (medians of the timed runs)."""
    lines = []
    for mode in data["config"]["modes"]:
        rows = []
        for q, entry in sorted(data["queries"].items(), key=lambda kv: int(kv[0])):
            times = entry["modes"][mode].get("progressive_median_s")
            if not times:
                continue
            exact = entry["modes"][base]["median_s"]
            cells = [f"Q{int(q)}", exact]
            for key in ("first_s", "accuracy95_s", "final_s"):
                t = times[key]
                cells += ["never", "-"] if t is None else [t, f"{t / exact:.2f}x"]
            quarter = entry["modes"][mode]["progressive"][0].get("quarter_accuracy")  # same in every run
            rows.append(cells + ["-" if quarter is None else f"{quarter:.3f}"])
        if rows:
            lines += ["", f"## Progressive answers ({mode})", "",
                      f"Medians of the timed runs; each time also as a fraction of the {base} query's median. "
                      "95%: the first estimate whose true accuracy (mean over cells of min(estimate/exact, "
                      "exact/estimate)) reached 0.95; exact: the last batch's answer, validated against DuckDB; "
                      "accuracy at 1/4: the true accuracy after a quarter of the batches (below 0.95, a quarter "
                      "of the data does not suffice for a 95% answer).",
                      "", markdown_table(["Q", f"{base} s", "first estimate s", "of exact", "95% accurate s",
                                          "of exact", "exact answer s", "of exact", "accuracy at 1/4"], rows)]
    return lines


def _warmups(cfg: dict) -> str:
    n = cfg.get("warmups", 1)  # results from before --warmups had one
    return {0: "no warm-up (first runs)", 1: "after one warm-up run"}.get(n, f"after {n} warm-up runs")


def _reads_summary(mode_summary: dict) -> str:
    if "riffle_reads" not in mode_summary:
        return "-"
    done, would = mode_summary["riffle_reads"], mode_summary["riffle_vanilla_reads"]
    if not would:
        return f"{done} / {would}"
    change = 100 * (1 - done / would)
    return f"{done} / {would} ({abs(change):.0f}% {'fewer' if change >= 0 else 'more'})"


def _riffle_reads(record: dict) -> str:
    return _reads_summary(record["metrics"] or {})


def _metric(record: dict, name: str, unit: float = 1):
    if not record["metrics"]:
        return "-"
    value = record["metrics"][name] / unit
    return round(value, 1) if unit != 1 else int(value)


def render_png(data: dict, path: Path) -> None:
    """Per query: each mode's median relative to the baseline's, with every timed run's spread, and for a
    mode answering progressively what it is for: its first estimate and its 95%-accurate answer.

    Bars are medians (for Rotary, the time to the exact answer); the whiskers span the fastest and slowest
    timed run (relative to the baseline's median, so the baseline's own whisker shows this machine's
    noise). Markers on a progressive mode's bar: its median time to the first estimate (black triangle)
    and to the first estimate 95% accurate (white circle). Riffle's legend entry carries its shuffle reads against Spark's.
    """
    plt = pyplot()
    modes = data["config"]["modes"]
    items = sorted(data["queries"].items(), key=lambda kv: int(kv[0]))
    labels = [f"Q{int(q)}" for q, _ in items]
    base = items[0][1]["baseline"]
    fig, ax = plt.subplots(figsize=(max(6, 0.45 * len(labels) + 2), 3.8))
    relative = len(modes) > 1
    width = 0.8 / len(modes)
    for i, m in enumerate(modes):
        xs = [x + (i - (len(modes) - 1) / 2) * width for x in range(len(labels))]
        scale = [e["modes"][base]["median_s"] if relative else 1.0 for _, e in items]
        runs = [[t / s for t in e["modes"][m]["wall_s"]] for (_, e), s in zip(items, scale)]
        medians = [e["modes"][m]["median_s"] / s for (_, e), s in zip(items, scale)]
        spread = [[md - min(r) for md, r in zip(medians, runs)], [max(r) - md for md, r in zip(medians, runs)]]
        ax.bar(xs, medians, width, yerr=spread, capsize=2, label=_bar_label(data, m),
               color="lightgray" if relative and m == base else None, error_kw={"linewidth": 0.8})
        _mark_progressive(ax, items, m, xs, scale)
    if relative:
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_ylabel(f"time / {base} median")
        ax.set_title(f"TPC-H SF {data['config']['sf']:g}: time relative to {base} (lower is faster; "
                     f"whiskers: fastest and slowest of {data['config']['repeat']} runs)", fontsize=9)
        ax.legend(fontsize=8, ncol=2, loc="upper left")
    else:
        ax.set_ylabel("time (s)")
        ax.set_title(f"TPC-H SF {data['config']['sf']:g}: {base} (median; whiskers: fastest and slowest of "
                     f"{data['config']['repeat']} runs)", fontsize=9)
    ax.set_xticks(range(len(labels)), labels, rotation=60, fontsize=8)
    save_figure(fig, path)
