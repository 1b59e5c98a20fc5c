"""The synthetic shuffle of the Riffle benchmark, and what to measure of one run of it.

Like the thesis's synthetic job (spec §5.1), it moves fixed-size blocks and does no real work:
``maps`` map tasks each write exactly one block of about ``block_bytes`` to each of ``reducers``
reduce partitions (shuffle compression off, so block size is what it says), and each reducer
only counts the rows it read.

The shuffle is Spark SQL's (UnsafeRow blocks), read as the JVM RDD of the repartitioned plan:
counting its rows reads every byte (an aggregate on top would let the optimizer shrink the rows
before the shuffle), and counting the same RDD again re-reads the same shuffle files.
"""

from __future__ import annotations

import math
import statistics
import tempfile
import time
from collections import Counter
from contextlib import contextmanager
from typing import NamedTuple

import pyarrow.compute as pc

from benchmarks.common import benchmark_session
from shuffle_merge import RequestModel, merge_summary, model_reads_per_reducer

PAYLOAD_BYTES = 1000
ROW_BYTES = PAYLOAD_BYTES + 32  # UnsafeRow of (int key, 1000-byte string): header, key, offset, data


def session(args, local_dir: str):
    """The benchmark's application: Riffle on, shuffle compression and AQE off, shuffle files under ``local_dir``."""
    return benchmark_session(
        args, ["telemetry", "riffle"], app_name="riffle-benchmark",
        conf={"spark.shuffle.compress": "false", "spark.sql.adaptive.enabled": "false",
              "spark.sql.shuffle.partitions": str(args.reducers), "spark.riffle.bestEffort.timeout": "120s",
              "spark.riffle.merger.memoryBudget": "512m", "spark.ui.showConsoleProgress": "false",
              "spark.local.dir": local_dir})


def clean_shuffles(spark, records) -> None:
    """Delete the run's shuffle files now (as Spark's cleaner would later), to bound disk use."""
    cleaner = spark.sparkContext._jsc.sc().cleaner().get()
    for sid in {s["shuffleId"] for s in records["stage"].to_pylist() if s["shuffleId"] is not None}:
        cleaner.doCleanupShuffle(sid, True)


def executor_pids(tm, count: int, timeout_s: float = 120) -> list[int]:
    """Process ids of the application's ``count`` executors, once all have registered (a new session returns
    before its executors do, and a disk cap must hold every one of them)."""
    deadline = time.monotonic() + timeout_s
    while True:
        pids = [e["pid"] for e in tm.executors().to_pylist() if e["event"] == "registered" and e["pid"]]
        if len(pids) >= count:
            return pids
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(pids)} of {count} executors registered within {timeout_s:.0f} s")
        time.sleep(0.5)


class CappedApplication(NamedTuple):
    """What the disk benchmarks run in: the application, its telemetry, its shuffle directory, its executors'
    process ids (for the disk cap) and the partition keys of the synthetic shuffle."""

    spark: object
    tm: object
    local_dir: str
    pids: list[int]
    keys: list[int]


@contextmanager
def capped_application(args):
    """The benchmark's application on a shuffle directory of its own under ``args.local_dir``, once every
    executor has registered; stopped, and the directory removed, when the block ends."""
    import spark_plugin

    with tempfile.TemporaryDirectory(prefix="riffle-bench-", dir=args.local_dir) as local:
        spark = session(args, local)
        try:
            tm = spark_plugin.telemetry(spark)
            yield CappedApplication(spark, tm, local, executor_pids(tm, args.executors),
                                    partition_keys(spark, args.reducers))
        finally:
            spark.stop()


def partition_keys(spark, reducers: int) -> list[int]:
    """One key per reduce partition, so that hash partitioning spreads rows exactly evenly."""
    rows = spark.range(0, 200 * reducers).selectExpr("id", f"pmod(hash(id), {reducers}) AS p").collect()
    keys = {}
    for r in rows:
        keys.setdefault(r.p, r.id)
    if len(keys) < reducers:
        raise RuntimeError(f"found keys for only {len(keys)} of {reducers} partitions")
    return [keys[p] for p in range(reducers)]


class SyntheticShuffle:
    """The shuffle, planned once: :meth:`run` executes it (the first time) or re-reads it."""

    def __init__(self, spark, keys: list[int], maps: int, block_bytes: int):
        from pyspark.sql import functions as F

        reducers = len(keys)
        self.rows = maps * reducers * max(1, block_bytes // ROW_BYTES)
        key_array = F.array(*[F.lit(k).cast("bigint") for k in keys])  # hashed as the longs they were picked as
        df = (spark.range(0, self.rows, 1, numPartitions=maps)
              .select(F.element_at(key_array, (F.col("id") % reducers + 1).cast("int")).alias("k"),
                      F.expr(f"repeat('x', {PAYLOAD_BYTES})").alias("payload")))
        self._rdd = df.repartition(reducers, "k")._jdf.queryExecution().toRdd()

    def run(self) -> None:
        counted = self._rdd.count()
        if counted != self.rows:
            raise RuntimeError(f"the shuffle lost or duplicated rows: read {counted}, expected {self.rows}")


def shuffle_job(spark, keys: list[int], maps: int, block_bytes: int) -> None:
    """Plan and run the synthetic shuffle once."""
    SyntheticShuffle(spark, keys, maps, block_bytes).run()


def block_size_fan_in(target_bytes: float, block_bytes: float, max_fan_in: int = 100) -> int:
    """Outputs per merge under the block-size policy when every output's average block is ``block_bytes``.

    >>> block_size_fan_in(2 * 2**20, 150 * 1024)
    14
    """
    return min(max_fan_in, max(2, math.ceil(target_bytes / block_bytes)))


def measure(records: dict, maps: int, reducers: int, fan_in: int | None, best_effort: float,
            target_block_bytes: int | None = None, scope: str = "host") -> dict:
    """Figures of one run from its telemetry records (see :func:`shuffle_job`).

    Complete merging is modelled per host or per executor, as ``scope`` merged. Under the block-size policy
    (``target_block_bytes``) with every block of the same size, a merge takes as
    many outputs as it needs for their average blocks to reach the target: that is the fan-in modelled."""
    stages = records["stage"].to_pylist()
    map_stage = next(s for s in stages if s["shuffleId"] is not None and s["numTasks"] == maps)
    shuffle_id = map_stage["shuffleId"]
    reduce_stage = next(s for s in stages if s["stageId"] != map_stage["stageId"] and s["numTasks"] == reducers
                        and s["shuffleLocalBlocks"] + s["shuffleRemoteBlocks"] > 0)
    tasks = records["task"].to_pylist()
    reduce_tasks = [t for t in tasks if t["stageId"] == reduce_stage["stageId"]]
    # Reads as the reader issued them: one per fetched block, merged or original. (Spark's own
    # local/remote block counters undercount SQL shuffle reads here, in vanilla Spark too.)
    reads = [r for r in records["shuffle_read"].to_pylist() if r["stageId"] == reduce_stage["stageId"]]
    blocks = [r["mergedBlocks"] + r["originalBlocks"] for r in reads]
    read_bytes = sum(t["shuffleLocalBytes"] + t["shuffleRemoteBytes"] for t in reduce_tasks)
    map_tasks = [t for t in tasks if t["stageId"] == map_stage["stageId"]]
    maps_per_executor = Counter(t["executorId"] for t in map_tasks)
    maps_per_merger = Counter(t["host"] for t in map_tasks) if scope == "host" else maps_per_executor
    sealed = [s for s in records["shuffle_merge"].to_pylist() if s["shuffleId"] == shuffle_id]
    tail_ms = sealed[0]["sealWaitMs"] if sealed else 0
    this_shuffle = {t: records[t].filter(pc.equal(records[t]["shuffleId"], shuffle_id))
                    for t in ("merge", "shuffle_merge", "shuffle_read")}
    merged_fraction = sealed[0]["mergedOutputs"] / sealed[0]["outputs"] if sealed and sealed[0]["outputs"] else 0.0
    model = RequestModel(maps, reducers, map_stage["shuffleWriteBytes"])
    if target_block_bytes is not None:
        fan_in = block_size_fan_in(target_block_bytes, map_stage["shuffleWriteBytes"] / (maps * reducers))
    complete = bool(sealed) and sealed[0]["sealReason"] == "all merges ended"
    if fan_in is None:
        predicted = thesis = float(maps)
    elif complete:  # a queue's single leftover output stays unmerged: still ceil(M_q/N) reads
        predicted = float(model_reads_per_reducer(list(maps_per_merger.values()), fan_in))
        thesis = model.best_effort_reads_per_reducer(fan_in, best_effort)
    else:  # best effort cut merging short: the model at the fraction actually merged
        predicted = model.best_effort_reads_per_reducer(fan_in, merged_fraction)
        thesis = model.best_effort_reads_per_reducer(fan_in, best_effort)
    per_reducer = statistics.mean(blocks)
    map_s = (map_stage["completionTime"] - map_stage["submissionTime"]) / 1000
    return {
        "shuffle_id": shuffle_id,
        "maps_per_executor": dict(maps_per_executor),
        "reads_per_reducer": per_reducer,
        "predicted_reads_per_reducer": predicted,
        "thesis_model_reads_per_reducer": thesis,
        "model_error": abs(per_reducer - predicted) / predicted,
        "avg_read_bytes": read_bytes / sum(blocks),
        "shuffle_bytes": map_stage["shuffleWriteBytes"],
        "map_stage_s": map_s,
        "merge_tail_s": tail_ms / 1000,
        "map_stage_with_tail_s": map_s + tail_ms / 1000,
        "reduce_stage_s": (reduce_stage["completionTime"] - reduce_stage["submissionTime"]) / 1000,
        "job_s": sum((j["completionTime"] - j["submissionTime"]) / 1000 for j in records["job"].to_pylist()),
        "merged_fraction": merged_fraction,
        "fan_in": fan_in,
        "merge": merge_summary(this_shuffle),
    }
