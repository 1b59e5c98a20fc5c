"""Markdown and PNG reports of the Riffle benchmarks, rendered from their JSON alone."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from benchmarks.common import cluster_label, markdown_table, pyplot, report_header, save_figure, write_markdown


def write_synthetic_report(json_path: Path) -> Path:
    data = json.loads(Path(json_path).read_text())
    conf = data["meta"]["conf"]
    summary = {c["label"]: data["summary"][c["label"]] for c in data["configs"]}  # the run's order
    rows = [[label, s["reads_per_reducer"], s["predicted_reads_per_reducer"], f"{100 * s['model_error']:.1f}%",
             s["thesis_model_reads_per_reducer"],
             s["avg_read_bytes"] / 1024, s["merged_fraction"], s["map_stage_s"], s["merge_tail_s"],
             s["reduce_stage_s"], s["job_s"], s["reduce_ratio"], s["job_ratio"]]
            for label, s in summary.items()]
    md = report_header(data["meta"], "Riffle: synthetic shuffle, N-way sweep") + [
        f"{conf['maps']} maps x {conf['reducers']} reducers, {conf['block_kb']} KiB per map-reduce block, "
        f"`{cluster_label(conf)}`, shuffle compression off, AQE off. All configurations "
        f"run in one application, interleaved over {conf['repeat']} rounds (per-job settings); medians.",
        "",
        markdown_table(["config", "reads/reducer", "model", "model error", "thesis (1-f)M+fM/N", "avg read KiB",
                        "merged fraction",
                        "map stage s", "merge tail s", "reduce stage s", "job s", "reduce / off", "job / off"], rows),
        "",
        "Reads per reducer are the blocks each reduce task fetched (one per merge used, one per unmerged "
        "output), from Riffle's read records. Model: vanilla M; all outputs merged: sum over hosts (or executors, "
        "per-executor scope) of ceil(M_h/N); best effort cut short: (1-f')M + f'M/N at the fraction f' actually "
        "merged. The thesis "
        "column evaluates its formula at the configured f (an upper bound when more got merged). Merge tail: "
        "time from the end of the map stage until reducers could start.",
        "",
        f"![N-way sweep]({Path(json_path).with_suffix('.png').name})", ""]
    _plot_synthetic(summary, Path(json_path).with_suffix(".png"))
    return write_markdown(json_path, md)


def _plot_synthetic(summary: dict, png: Path) -> None:
    plt = pyplot()
    labels = list(summary)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    left.bar(labels, [summary[k]["reads_per_reducer"] for k in labels], label="measured")
    left.plot(labels, [summary[k]["predicted_reads_per_reducer"] for k in labels], "k_", markersize=18,
              label="model")
    left.set_yscale("log")
    left.set_ylabel("reads per reducer")
    left.legend()
    bottom = [summary[k]["map_stage_s"] for k in labels]
    right.bar(labels, bottom, label="map stage")
    right.bar(labels, [summary[k]["merge_tail_s"] for k in labels], bottom=bottom, label="merge tail")
    right.bar(labels, [summary[k]["reduce_stage_s"] for k in labels],
              bottom=[b + summary[k]["merge_tail_s"] for b, k in zip(bottom, labels)], label="reduce stage")
    right.set_ylabel("seconds (median)")
    right.legend()
    for ax in (left, right):
        ax.tick_params(axis="x", rotation=45, labelsize=8)
    save_figure(fig, png)


def write_slow_disk_report(json_path: Path) -> Path:
    data = json.loads(Path(json_path).read_text())
    conf, s = data["meta"]["conf"], data["summary"]
    rows = [[m, s[m]["reduce_stage_s"], s[m]["wall_s"], s[m]["reads_per_reducer"], s[m]["avg_read_bytes"] / 1024,
             int(s[m]["disk_reads"]), s[m]["disk_read_bytes"] / 2**20] for m in ("vanilla", "riffle")]
    md = report_header(data["meta"], "Riffle: cold reduce stage on an IOPS-capped disk") + [
        f"{conf['maps']} maps x {conf['reducers']} reducers, {conf['block_kb']} KiB blocks; Riffle N={conf['fan_in']} "
        f"(complete merge). Each round drops the page cache, puts the executors in a cgroup capped at "
        f"{conf['iops']} read IOPS on device {conf['device']} with {conf.get('io_unit_kb', '?')} KiB I/O units "
        f"(readahead), and re-reads the already written shuffle (map stage skipped); vanilla and Riffle "
        f"alternate, {conf['repeat']} rounds; medians.",
        "",
        markdown_table(["mode", "reduce stage s", "query wall s", "reads/reducer", "avg read KiB",
                        "disk read requests", "disk read MiB"], rows),
        "",
        f"Reduce-stage speedup: **{s['speedup']:.2f}x**; read requests that reached the disk: "
        f"**{s['disk_read_ratio']:.1f}x** fewer (counted by the cgroup: `blkio.throttle.io_serviced`).",
        "",
        "Reads that hit the page cache never reach the disk: a readahead unit larger than a block brings "
        "the neighbouring blocks of the same map file, which other reducers read next, so vanilla's disk "
        "requests are fewer than its block reads on a machine with memory to spare.",
        ""]
    return write_markdown(json_path, md)


def write_whole_job_report(json_path: Path) -> Path:
    data = json.loads(Path(json_path).read_text())
    conf, s = data["meta"]["conf"], data["summary"]
    order = conf["modes"]
    rows = [[m, s[m]["job_s"], s[m]["map_stage_s"], s[m]["merge_tail_s"], s[m]["reduce_stage_s"],
             s[m]["reads_per_reducer"], s[m]["predicted_reads_per_reducer"], s[m]["avg_read_bytes"] / 1024,
             int(s[m]["disk_reads"]), s[m]["disk_read_bytes"] / 2**20] for m in order]

    def ratio(mode, key):
        r = s["ratios"][mode][key]
        span = f" (95% interval {r['low']:.2f}-{r['high']:.2f})" if r["low"] is not None else ""
        return f"**{r['geomean']:.2f}x**{span}"

    policies = {"riffle": f"N = {conf['fan_in']}", "riffle-blocksize": f"block size {conf['target_block_kb']} KiB"}

    md = report_header(data["meta"], "Riffle: whole job on an IOPS-capped disk") + [
        f"{conf['maps']} maps x {conf['reducers']} reducers, {conf['block_kb']} KiB blocks, {conf['executors']} "
        f"executors sharing one host (`{cluster_label(conf)}`); Riffle "
        f"{', '.join(f'`{m}`: {policies[m]}' for m in order[1:])}, merging per host, complete. Every run writes "
        f"a fresh shuffle: map stage, merges and reduce stage, with the executors' "
        f"reads capped at {conf['iops']} IOPS together on device {conf['device']} ({conf['io_unit_kb']} KiB "
        f"units), and the shuffle's files written out and evicted from the page cache every "
        f"{conf['drop_interval_ms']} ms. The modes take turns "
        f"(order rotated each round), {conf['repeat']} rounds after a warm-up; medians.",
        "",
        markdown_table(["mode", "job s", "map stage s", "merge tail s", "reduce stage s", "reads/reducer",
                        "model", "avg read KiB", "disk read requests", "disk read MiB"], rows),
        "",
        *[f"`{m}`: whole job over vanilla's {ratio(m, 'job_s')}; reduce stage {ratio(m, 'reduce_stage_s')}."
          for m in order[1:]],
        "",
        "Ratios are geometric means of per-round ratios. Disk read requests counted by the cgroup "
        "(`blkio.throttle.io_serviced`).",
        "",
        "Buffered writes are not capped (cgroup v1 throttles the write-back of no group), so Riffle's extra "
        "merge writes cost less here than on a saturated disk.",
        ""]
    return write_markdown(json_path, md)


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        path = Path(arg)
        writer = (write_slow_disk_report if ".slow-disk" in path.name
                  else write_whole_job_report if ".whole-job" in path.name else write_synthetic_report)
        print(writer(path))
