"""Riffle's benchmarks: ``python -m benchmarks.riffle {synthetic,slow-disk,whole-job,driver-scale,tpch}``.

* ``synthetic``: the thesis's synthetic job scaled down (M maps x R reducers, ~150 KB blocks),
  with merging off, N-way for each N, and N-way with best effort, all in one application and
  interleaved round by round (per-job settings), so every configuration sees the same machine.
* ``slow-disk``: the reduce stage of a vanilla and a merged shuffle read cold (page cache
  dropped) by executors whose disk reads are capped at HDD-class IOPS (cgroup blkio).
* ``whole-job``: map, merge and reduce of fresh shuffles, vanilla against Riffle, with four executors
  sharing one IOPS-capped disk and a page cache too small for the shuffle (:mod:`.whole_job`).
* ``skew-join``: AQE's skew join splits a partition into map-index ranges; vanilla, Riffle using merges partly
  in a task's range, and Riffle passing them over, on the IOPS-capped disk (:mod:`.skew_join`).
* ``driver-scale``: the driver's scheduler under 500 simulated executors and 10,000 map outputs, merges
  pushed to executors against executors polling every 10 ms (:mod:`.driver_scale`).
* ``tpch``: the TPC-H harness with modes vanilla and riffle.

Each writes ``<date>-<sha>-<kind>.json`` plus a Markdown/PNG report under
``benchmarks/results/riffle/`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import (RESULTS_DIR, add_master_option, result_path, run_metadata, spread,
                               write_json)

from .driver_scale import POLL_COMMIT, driver_scale
from .report import write_slow_disk_report, write_synthetic_report
from .skew_join import skew_join
from .slow_disk import IopsCap, capped_device, drop_caches
from .whole_job import whole_job
from .workload import (SyntheticShuffle, capped_application, clean_shuffles, measure, partition_keys, session,
                       shuffle_job)


def configs(fan_ins: list[int], block_targets_kb: list[int] = (), scopes: list[str] = ("host",)) -> list[dict]:
    """Merging off, then N-way complete for each N and merge scope, N-way best effort (95%) for each N,
    then the block-size policy (complete) for each target; all but the complete N-way in the first scope."""
    out = [{"label": "off", "settings": {"enabled": False}, "fan_in": None, "best_effort": 1.0}]
    for best_effort in (1.0, 0.95):
        for n in fan_ins:
            for scope in scopes if best_effort == 1.0 else scopes[:1]:
                label = f"N={n}" + (" best-effort" if best_effort < 1 else "") + (
                    f" per-{scope}" if len(scopes) > 1 else "")
                out.append({"label": label, "fan_in": n, "best_effort": best_effort, "scope": scope,
                            "settings": {"fan_in": n, "best_effort": best_effort, "max_wait_ratio": 100,
                                         "scope": scope}})
    for kb in block_targets_kb:
        out.append({"label": f"B={kb}K", "fan_in": None, "target_block_bytes": kb * 1024, "best_effort": 1.0,
                    "scope": scopes[0],
                    "settings": {"policy": "blocksize", "target_block_bytes": f"{kb}k", "best_effort": 1.0,
                                 "max_wait_ratio": 100, "scope": scopes[0]}})
    return out


def synthetic(args) -> Path:
    import spark_plugin
    from shuffle_merge import job_settings
    from tqdm import tqdm

    runs = []
    plan = configs(args.fan_ins, args.block_targets, args.scopes)
    with tempfile.TemporaryDirectory(prefix="riffle-bench-", dir=args.local_dir) as local:
        spark = session(args, local)
        try:
            tm = spark_plugin.telemetry(spark)
            keys = partition_keys(spark, args.reducers)
            shuffle_job(spark, keys, args.maps, args.block_kb * 1024)  # warm-up, excluded
            with tqdm(total=len(plan) * args.repeat, unit="job", file=sys.stderr) as bar:
                for r in range(args.repeat):
                    for cfg in plan[r % len(plan):] + plan[:r % len(plan)]:
                        bar.set_description(f"round {r + 1} {cfg['label']}")
                        mark = tm.mark()
                        with job_settings(spark, **cfg["settings"]):
                            shuffle_job(spark, keys, args.maps, args.block_kb * 1024)
                        records = tm.records(since=mark)
                        runs.append({"config": cfg["label"], "round": r,
                                     **measure(records, args.maps, args.reducers, cfg["fan_in"], cfg["best_effort"],
                                               cfg.get("target_block_bytes"), cfg.get("scope", "host"))})
                        clean_shuffles(spark, records)
                        bar.update(1)
        finally:
            spark.stop()
    summary = {}
    for cfg in plan:
        mine = [x for x in runs if x["config"] == cfg["label"]]
        summary[cfg["label"]] = {key: spread(x[key] for x in mine)["median"] for key in (
            "reads_per_reducer", "predicted_reads_per_reducer", "thesis_model_reads_per_reducer", "model_error",
            "avg_read_bytes", "map_stage_s",
            "merge_tail_s", "map_stage_with_tail_s", "reduce_stage_s", "job_s", "merged_fraction")}
    base = summary["off"]
    for s in summary.values():
        s["reads_ratio"] = s["reads_per_reducer"] / base["reads_per_reducer"]
        s["reduce_ratio"] = s["reduce_stage_s"] / base["reduce_stage_s"]
        s["job_ratio"] = s["job_s"] / base["job_s"]
    meta = run_metadata({"maps": args.maps, "reducers": args.reducers, "block_kb": args.block_kb,
                         "executors": args.executors, "repeat": args.repeat, "fan_ins": args.fan_ins,
                         "block_targets_kb": args.block_targets, "scopes": args.scopes, "master": args.master})
    path = write_json(result_path("riffle", "synthetic.json", meta, args.out),
                      {"meta": meta, "configs": plan, "runs": runs, "summary": summary})
    print(write_synthetic_report(path))
    return path


def slow_disk(args) -> Path | None:
    from shuffle_merge import job_settings

    device = capped_device(args, "slow-disk")
    if device is None:
        return None
    runs = []
    with capped_application(args) as app:
        modes = {"vanilla": {"enabled": False},
                 "riffle": {"fan_in": args.fan_in, "best_effort": 1.0, "max_wait_ratio": 100}}
        shuffles = {m: SyntheticShuffle(app.spark, app.keys, args.maps, args.block_kb * 1024) for m in modes}
        for mode, settings in modes.items():  # write both shuffles (warm), then only re-read them
            with job_settings(app.spark, **settings):
                shuffles[mode].run()
        for r in range(args.repeat):
            for mode in (["vanilla", "riffle"] if r % 2 == 0 else ["riffle", "vanilla"]):
                drop_caches()
                mark = app.tm.mark()
                with job_settings(app.spark, **modes[mode]):
                    with IopsCap(args.iops, device, args.io_unit_kb) as cap:
                        cap.add(app.pids)
                        start = time.perf_counter()
                        shuffles[mode].run()
                        wall = time.perf_counter() - start
                records = app.tm.records(since=mark)
                runs.append({"mode": mode, "round": r, "wall_s": wall, "disk_reads": cap.reads_,
                             "disk_read_bytes": cap.read_bytes_, **_cold_read(records, args.maps, args.reducers)})
                print(f"[round {r + 1}/{args.repeat}] {mode}: {wall:.1f} s, {cap.reads_} disk reads",
                      file=sys.stderr)
    summary = {m: {k: statistics.median(x[k] for x in runs if x["mode"] == m)
                   for k in ("wall_s", "reduce_stage_s", "reads_per_reducer", "avg_read_bytes", "disk_reads",
                             "disk_read_bytes")} for m in ("vanilla", "riffle")}
    summary["speedup"] = summary["vanilla"]["reduce_stage_s"] / summary["riffle"]["reduce_stage_s"]
    summary["disk_read_ratio"] = summary["vanilla"]["disk_reads"] / max(1, summary["riffle"]["disk_reads"])
    meta = run_metadata({"maps": args.maps, "reducers": args.reducers, "block_kb": args.block_kb, "iops": args.iops,
                         "io_unit_kb": args.io_unit_kb, "fan_in": args.fan_in, "device": device,
                         "repeat": args.repeat, "executors": args.executors})
    path = write_json(result_path("riffle", f"slow-disk-{args.io_unit_kb}k.json", meta, args.out),
                      {"meta": meta, "runs": runs, "summary": summary})
    print(write_slow_disk_report(path))
    return path


def _cold_read(records, maps: int, reducers: int) -> dict:
    """Reduce-stage time and reads of a re-run whose map stage was skipped."""
    stages = records["stage"].to_pylist()
    if any(s["numTasks"] == maps and s["shuffleId"] is not None
           and s["shuffleLocalBlocks"] + s["shuffleRemoteBlocks"] == 0 for s in stages):
        raise RuntimeError("the map stage ran again: the shuffle was not reused, the read was not cold-only")
    stage = next(s for s in stages
                 if s["numTasks"] == reducers and s["shuffleLocalBlocks"] + s["shuffleRemoteBlocks"] > 0)
    mine = [t for t in records["task"].to_pylist() if t["stageId"] == stage["stageId"]]
    blocks = sum(t["shuffleLocalBlocks"] + t["shuffleRemoteBlocks"] for t in mine)
    return {"reduce_stage_s": (stage["completionTime"] - stage["submissionTime"]) / 1000,
            "reads_per_reducer": blocks / len(mine),
            "avg_read_bytes": sum(t["shuffleLocalBytes"] + t["shuffleRemoteBytes"] for t in mine) / blocks}


def tpch(args) -> int:
    from benchmarks.tpch import cli

    out = args.out or RESULTS_DIR / "riffle" / f"tpch-sf{args.sf:g}"
    return cli.main(["--sf", str(args.sf), "--modes", "vanilla,riffle", "--repeat", str(args.repeat),
                     "--out", str(out), "--no-progress"] + (["--master", args.master] if args.master else []))


def _scopes(text: str) -> list[str]:
    scopes = text.split(",")
    if not scopes or any(s not in ("host", "executor") for s in scopes):
        raise argparse.ArgumentTypeError(f"{text!r}: give host, executor or host,executor")
    return scopes


def _policies(text: str) -> list[str]:
    policies = text.split(",")
    if any(p not in ("fanin", "blocksize") for p in policies):
        raise argparse.ArgumentTypeError(f"{text!r}: give fanin, blocksize or fanin,blocksize")
    return policies


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.riffle", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="kind", required=True)
    for name, helptext in (("synthetic", "N-way sweep on a synthetic shuffle"),
                           ("slow-disk", "cold reduce stage under an IOPS cap"),
                           ("whole-job", "map, merge and reduce under an IOPS cap and cache pressure"),
                           ("skew-join", "AQE skew-join splits reading map ranges, partial merges on and off"),
                           ("tpch", "TPC-H, vanilla vs riffle")):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("--repeat", type=int, default=3, help="rounds (default 3)")
        p.add_argument("--out", type=Path, default=None, help="output folder (default benchmarks/results/riffle)")
        if name in ("synthetic", "tpch"):  # the disk benchmarks cap their own executors' reads
            add_master_option(p)
        if name == "tpch":
            p.add_argument("--sf", type=float, default=1.0, help="scale factor (default 1)")
            continue
        p.add_argument("--maps", type=int, default=200, help="map tasks M (default 200)")
        p.add_argument("--reducers", type=int, default=50, help="reduce partitions R (default 50)")
        p.add_argument("--block-kb", type=int, default=150, help="bytes per map-reduce block, KiB (default 150)")
        p.add_argument("--executors", type=int, default=2, help="executor JVMs (default 2)")
        p.add_argument("--local-dir", default=tempfile.gettempdir(), help="where shuffle files go (default /tmp)")
    sub.choices["synthetic"].add_argument("--fan-ins", type=lambda s: [int(x) for x in s.split(",")],
                                          default=[5, 10, 20, 40], help="N values (default 5,10,20,40)")
    sub.choices["synthetic"].add_argument("--block-targets", type=lambda s: [int(x) for x in s.split(",")],
                                          default=[], metavar="KIB,...",
                                          help="also the block-size policy with each target merged block size")
    sub.choices["synthetic"].add_argument("--scopes", type=_scopes, default=["host"], metavar="SCOPE,...",
                                          help="merge scopes of the complete N-way runs: host, executor or "
                                               "host,executor (default host)")
    for name in ("slow-disk", "whole-job", "skew-join"):
        sub.choices[name].add_argument("--fan-in", type=int, default=10, help="N of the merged shuffle (default 10)")
        sub.choices[name].add_argument("--iops", type=int, default=200, help="read IOPS cap (default 200)")
        sub.choices[name].add_argument("--io-unit-kb", type=int, default=512,
                                       help="device readahead during cold reads, KiB (default 512, the thesis's unit)")
    sub.choices["whole-job"].set_defaults(executors=4)  # executors sharing a host and its disk
    sub.choices["whole-job"].add_argument("--policies", type=_policies, default=["fanin"], metavar="POLICY,...",
                                          help="Riffle modes beside vanilla: fanin, blocksize or fanin,blocksize "
                                               "(default fanin)")
    sub.choices["whole-job"].add_argument("--target-block-kb", type=int, default=2048,
                                          help="target merged block of the blocksize policy, KiB (default 2048)")
    sub.choices["whole-job"].add_argument("--drop-interval-ms", type=int, default=500,
                                          help="evict the shuffle's files from the page cache this often (default 500)")
    skew = sub.choices["skew-join"]
    skew.set_defaults(executors=4, maps=200, reducers=16)
    skew.add_argument("--rows", type=int, default=400_000, help="fact rows (default 400000)")
    skew.add_argument("--skew", type=float, default=0.9, help="share of rows on the skewed key (default 0.9)")
    skew.add_argument("--advisory-kb", type=int, default=4096,
                      help="AQE's advisory partition size, KiB: the skewed partition's split size (default 4096)")
    skew.add_argument("--drop-interval-ms", type=int, default=500,
                      help="evict the shuffle's files from the page cache this often (default 500)")
    scale = sub.add_parser("driver-scale", help="the driver's scheduler under many executors: pushes vs polling")
    scale.add_argument("--repeat", type=int, default=3, help="rounds (default 3)")
    scale.add_argument("--out", type=Path, default=None, help="output folder (default benchmarks/results/riffle)")
    scale.add_argument("--executors", type=int, default=500, help="simulated executors (default 500)")
    scale.add_argument("--executors-per-host", type=int, default=10, help="executors per host (default 10)")
    scale.add_argument("--maps", type=int, default=10_000, help="map outputs (default 10000)")
    scale.add_argument("--maps-per-s", type=int, default=1000, help="map outputs per second (default 1000)")
    scale.add_argument("--block-kb", type=int, default=150, help="bytes per map-reduce block, KiB (default 150)")
    scale.add_argument("--reducers", type=int, default=1000, help="reduce partitions (default 1000)")
    scale.add_argument("--merge-ms", type=int, default=100, help="how long a simulated merge runs (default 100)")
    scale.add_argument("--poll-ms", type=int, default=10, help="the polling interval compared (default 10)")
    scale.add_argument("--poll-commit", default=POLL_COMMIT,
                       help=f"commit of the polling scheduler, compiled from git (default {POLL_COMMIT})")
    args = parser.parse_args(argv)
    if args.kind == "tpch":
        return tpch(args)
    if args.kind == "driver-scale":
        driver_scale(args)
        return 0
    if min(args.maps, args.reducers, args.block_kb, args.executors, args.repeat) < 1:
        parser.error("--maps, --reducers, --block-kb, --executors and --repeat must be >= 1")
    {"synthetic": synthetic, "slow-disk": slow_disk, "whole-job": whole_job, "skew-join": skew_join}[args.kind](args)
    return 0
