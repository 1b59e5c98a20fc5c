"""The skew-join benchmark: reduce tasks that read a range of map outputs, with and without partial merges.

A fact table of ``--maps`` partitions whose ``--skew`` share of rows has one key is joined with a small table
(no broadcast); AQE's skew join splits that key's partition into map-index ranges, each read by a task of its
own. Three modes take turns in one application, every round writing its shuffle anew on the disk benchmarks'
IOPS-capped disk under cache pressure (see :mod:`.whole_job`): vanilla; Riffle using a merge partly in a
task's range (fetched whole, the other sub-blocks skipped; the default); and Riffle passing such merges over
(``partial_merges=False``), as it did before. Reported: the job's time, and for the range tasks the blocks
they fetched, against the reads vanilla Spark issues for the same ranges.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from benchmarks.common import (geomean_interval, markdown_table, report_header, result_path, run_metadata,
                               write_json, write_markdown)

from .slow_disk import capped_device
from .whole_job import capped_run
from .workload import capped_application, clean_shuffles

MODES = {"vanilla": {"enabled": False},
         "riffle": {"partial_merges": True},
         "riffle-whole-only": {"partial_merges": False}}
PAD_BYTES = 100
KEYS = 97


def aqe_skew_join(spark, reducers: int, advisory_kb: int) -> None:
    """AQE on, splitting a partition over twice the median and over ``advisory_kb`` into map ranges."""
    for key, value in {"spark.sql.adaptive.enabled": "true", "spark.sql.adaptive.skewJoin.enabled": "true",
                       "spark.sql.adaptive.skewJoin.skewedPartitionFactor": "2",
                       "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes": f"{advisory_kb}k",
                       "spark.sql.adaptive.advisoryPartitionSizeInBytes": f"{advisory_kb}k",
                       "spark.sql.adaptive.coalescePartitions.enabled": "false",
                       "spark.sql.autoBroadcastJoinThreshold": "-1",
                       "spark.sql.shuffle.partitions": str(reducers)}.items():
        spark.conf.set(key, value)


def skewed_join(spark, maps: int, rows: int, skew: float) -> list:
    """Rows and the largest padding per key name after the join; ``skew`` of the facts have key 0. The padding
    varies by row and is aggregated after the join, so it is shuffled: an unused or constant column would be
    pruned or folded away before the join."""
    facts = spark.range(0, rows, 1, maps).selectExpr(
        f"CASE WHEN rand(7) < {skew} THEN 0 ELSE id % {KEYS} END AS k",
        f"repeat(char(65 + id % 26), {PAD_BYTES}) AS pad")
    names = spark.range(0, KEYS, 1, 4).selectExpr("id AS k", "concat('key-', id) AS name")
    joined = facts.join(names, "k").groupBy("name").agg({"*": "count", "pad": "max"})
    return sorted(joined.selectExpr("name", "`count(1)`", "length(`max(pad)`)").collect())


def range_reads(records: dict, maps: int) -> dict:
    """What the reduce tasks reading a map range (not all maps) fetched, and what vanilla Spark would read."""
    ranged = [r for r in records["shuffle_read"].to_pylist()
              if r["startMapIndex"] >= 0 and r["endMapIndex"] - r["startMapIndex"] < maps]
    return {"range_tasks": len(ranged),
            "range_reads": sum(r["mergedBlocks"] + r["originalBlocks"] for r in ranged),
            "range_vanilla_reads": sum(r["vanillaReads"] for r in ranged),
            "groups_partial": sum(r["groupsPartial"] for r in ranged)}


def skew_join(args) -> Path | None:
    from shuffle_merge import job_settings

    device = capped_device(args, "skew-join")
    if device is None:
        return None
    order = list(MODES)
    runs, answer = [], None
    with capped_application(args) as app:
        aqe_skew_join(app.spark, args.reducers, args.advisory_kb)
        riffle = {"fan_in": args.fan_in, "best_effort": 1.0, "max_wait_ratio": 100}
        with job_settings(app.spark, **riffle):
            answer = skewed_join(app.spark, args.maps, args.rows, args.skew)  # warm-up (JIT, plans), not timed
        for r in range(args.repeat):
            for mode in order[r % len(order):] + order[:r % len(order)]:
                settings = MODES[mode] if mode == "vanilla" else {**riffle, **MODES[mode]}
                run = capped_run(app, args, device, settings,
                                 lambda: skewed_join(app.spark, args.maps, args.rows, args.skew))
                if run.result != answer:
                    raise RuntimeError(f"{mode} changed the join's answer")
                runs.append({"mode": mode, "round": r, "wall_s": run.wall_s, "disk_reads": run.disk_reads,
                             **range_reads(run.records, args.maps)})
                clean_shuffles(app.spark, run.records)
                print(f"[round {r + 1}/{args.repeat}] {mode}: {run.wall_s:.1f} s, range tasks fetched "
                      f"{runs[-1]['range_reads']} blocks ({runs[-1]['range_vanilla_reads']} vanilla), "
                      f"{run.disk_reads} disk reads", file=sys.stderr)
    meta = run_metadata({"maps": args.maps, "rows": args.rows, "skew": args.skew, "reducers": args.reducers,
                         "advisory_kb": args.advisory_kb, "executors": args.executors, "fan_in": args.fan_in,
                         "iops": args.iops, "io_unit_kb": args.io_unit_kb, "drop_interval_ms": args.drop_interval_ms,
                         "device": device, "repeat": args.repeat, "modes": order})
    path = write_json(result_path("riffle", "skew-join.json", meta, args.out),
                      {"meta": meta, "runs": runs, "summary": summarize(runs, order)})
    print(write_report(path))
    return path


def summarize(runs: list[dict], order: list[str]) -> dict:
    """Medians per mode and each Riffle mode's time over vanilla's (geometric mean of per-round ratios)."""
    keys = ("wall_s", "disk_reads", "range_tasks", "range_reads", "range_vanilla_reads", "groups_partial")
    summary = {m: {k: statistics.median(x[k] for x in runs if x["mode"] == m) for k in keys} for m in order}
    by_round = {(x["round"], x["mode"]): x for x in runs}
    rounds = sorted({x["round"] for x in runs})
    summary["ratios"] = {m: geomean_interval([by_round[r, m]["wall_s"] / by_round[r, "vanilla"]["wall_s"]
                                              for r in rounds]) for m in order[1:]}
    return summary


def write_report(json_path: Path) -> Path:
    import json

    data = json.loads(Path(json_path).read_text())
    conf, s = data["meta"]["conf"], data["summary"]
    rows = []
    for m in conf["modes"]:
        ratio = s["ratios"].get(m)
        span = "" if ratio is None or ratio["low"] is None else f" ({ratio['low']:.2f}-{ratio['high']:.2f})"
        rows.append([m, s[m]["wall_s"], "1" if ratio is None else f"{ratio['geomean']:.2f}{span}",
                     int(s[m]["range_tasks"]), int(s[m]["range_reads"]), int(s[m]["range_vanilla_reads"]),
                     int(s[m]["groups_partial"]), int(s[m]["disk_reads"])])
    md = report_header(data["meta"], "Riffle: AQE skew join, merges partly in a task's map range") + [
        f"{conf['rows']} rows in {conf['maps']} map partitions, {100 * conf['skew']:.0f}% of them on one key, "
        f"joined with {KEYS} keys into {conf['reducers']} partitions; AQE splits the skewed one into ranges of "
        f"about {conf['advisory_kb']} KiB. {conf['executors']} executors share one host, Riffle N = "
        f"{conf['fan_in']} per host; reads capped at {conf['iops']} IOPS ({conf['io_unit_kb']} KiB units), the "
        f"shuffle's files evicted every {conf['drop_interval_ms']} ms. Modes rotate, {conf['repeat']} rounds "
        "after a warm-up; medians, time ratios as geometric means of per-round ratios (95% interval).",
        "",
        markdown_table(["mode", "job s", "time / vanilla", "range tasks", "blocks they fetched",
                        "vanilla's reads for them", "merges used partly", "disk read requests"], rows),
        ""]
    return write_markdown(json_path, md)
