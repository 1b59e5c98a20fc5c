"""The whole-job benchmark: map, merge and reduce of a fresh shuffle, every read on an IOPS-capped disk.

The executors share one host and its disk (``--executors`` of one local-cluster, merging per host): one blkio
group caps the read requests of all of them together at ``--iops``, with ``--io-unit-kb`` I/O units
(readahead). A shuffle larger than the page cache is emulated by cache pressure: every ``--drop-interval-ms``
the shuffle's files are written out and evicted from the page cache, so the map outputs a merge reads and the
files a reducer reads come from the disk, as on a host whose memory holds a small part of the shuffle. Vanilla
and Riffle run under the same cap and pressure, alternating round by round, each writing its shuffle anew.

Limit: cgroup v1 throttles reads only here. Buffered writes are written back by kernel threads outside the
group, so map and merge writes are not capped (the pressure writes them out); Riffle's extra writes are the part
this benchmark undercharges.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import NamedTuple

from benchmarks.common import geomean_interval, result_path, run_metadata, write_json

from .report import write_whole_job_report
from .slow_disk import CachePressure, IopsCap, capped_device, drop_caches
from .workload import capped_application, clean_shuffles, measure, shuffle_job

class CappedRun(NamedTuple):
    """One timed run under the disk cap and cache pressure: its result, time, telemetry and disk figures."""

    result: object
    wall_s: float
    records: dict
    disk_reads: int
    disk_read_bytes: int
    eviction_passes: int


def capped_run(app, args, device: str, settings: dict, job) -> CappedRun:
    """Run ``job()`` under per-job Riffle ``settings`` after dropping the page cache, with the executors' reads
    capped at ``args.iops`` and the shuffle's files evicted every ``args.drop_interval_ms``."""
    from shuffle_merge import job_settings

    drop_caches()
    mark = app.tm.mark()
    with job_settings(app.spark, **settings), IopsCap(args.iops, device, args.io_unit_kb) as cap, \
            CachePressure(app.local_dir, args.drop_interval_ms / 1000) as pressure:
        cap.add(app.pids)
        start = time.perf_counter()
        result = job()
        wall = time.perf_counter() - start
    return CappedRun(result, wall, app.tm.records(since=mark), cap.reads_, cap.read_bytes_, pressure.passes_)


def modes(args) -> dict[str, dict]:
    """Vanilla, then Riffle under each policy asked for (``--policies``): per-job settings and what to model."""
    riffle = {"best_effort": 1.0, "max_wait_ratio": 100, "scope": "host"}
    out = {"vanilla": {"settings": {"enabled": False}, "fan_in": None, "target": None}}
    if "fanin" in args.policies:
        out["riffle"] = {"settings": {**riffle, "fan_in": args.fan_in}, "fan_in": args.fan_in, "target": None}
    if "blocksize" in args.policies:
        out["riffle-blocksize"] = {"settings": {**riffle, "policy": "blocksize",
                                                "target_block_bytes": f"{args.target_block_kb}k"},
                                   "fan_in": None, "target": args.target_block_kb * 1024}
    return out


def whole_job(args) -> Path | None:
    device = capped_device(args, "whole-job")
    if device is None:
        return None
    plan = modes(args)
    order = list(plan)
    runs = []
    with capped_application(args) as app:
        shuffle_job(app.spark, app.keys, args.maps, args.block_kb * 1024)  # warm-up (JIT, plans), not timed
        for r in range(args.repeat):
            for mode in order[r % len(order):] + order[:r % len(order)]:
                run = capped_run(app, args, device, plan[mode]["settings"],
                                 lambda: shuffle_job(app.spark, app.keys, args.maps, args.block_kb * 1024))
                runs.append({"mode": mode, "round": r, "wall_s": run.wall_s, "disk_reads": run.disk_reads,
                             "disk_read_bytes": run.disk_read_bytes, "eviction_passes": run.eviction_passes,
                             **measure(run.records, args.maps, args.reducers, plan[mode]["fan_in"], 1.0,
                                       plan[mode]["target"])})
                clean_shuffles(app.spark, run.records)
                print(f"[round {r + 1}/{args.repeat}] {mode}: job {runs[-1]['job_s']:.1f} s, reduce stage "
                      f"{runs[-1]['reduce_stage_s']:.1f} s, {run.disk_reads} disk reads", file=sys.stderr)
    meta = run_metadata({"maps": args.maps, "reducers": args.reducers, "block_kb": args.block_kb,
                         "executors": args.executors, "fan_in": args.fan_in, "policies": args.policies,
                         "target_block_kb": args.target_block_kb, "modes": order, "iops": args.iops,
                         "io_unit_kb": args.io_unit_kb, "drop_interval_ms": args.drop_interval_ms,
                         "device": device, "repeat": args.repeat})
    path = write_json(result_path("riffle", "whole-job.json", meta, args.out),
                      {"meta": meta, "runs": runs, "summary": summarize(runs, order)})
    print(write_whole_job_report(path))
    return path


def summarize(runs: list[dict], order: list[str]) -> dict:
    """Medians per mode, and each Riffle mode's time over vanilla's (``ratios``) as the geometric mean of
    per-round ratios with a 95% interval (each round runs every mode back to back)."""
    keys = ("job_s", "map_stage_s", "merge_tail_s", "reduce_stage_s", "wall_s", "reads_per_reducer",
            "predicted_reads_per_reducer", "model_error", "avg_read_bytes", "disk_reads", "disk_read_bytes")
    summary = {m: {k: statistics.median(x[k] for x in runs if x["mode"] == m) for k in keys} for m in order}
    by_round = {(x["round"], x["mode"]): x for x in runs}
    rounds = sorted({x["round"] for x in runs})
    summary["ratios"] = {}
    for mode in order[1:]:
        summary["ratios"][mode] = {
            key: geomean_interval([by_round[r, mode][key] / by_round[r, "vanilla"][key] for r in rounds])
            for key in ("job_s", "reduce_stage_s")}
    return summary
