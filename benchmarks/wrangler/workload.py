"""The benchmark's job and its per-arm measurements, computed from telemetry records alone."""

from __future__ import annotations

import numpy as np
import pandas as pd

from spark_plugin.wrangler import label_tasks


def multi_stage_job(spark, partitions: int, work: int) -> int:
    """A map stage and a reduce stage, each task spinning ``work`` loop steps of Python CPU.

    Returns the sum of every value, which must equal ``sum(range(partitions * 2000))``.
    """
    def spin(items):
        total = 0
        for i in range(work):
            total += i % 7
        yield from items

    data = spark.sparkContext.parallelize(range(partitions * 2000), partitions)
    sums = (data.mapPartitions(spin).map(lambda x: (x % 997, x))
            .reduceByKey(lambda a, b: a + b, partitions).mapPartitions(spin))
    return sum(v for _, v in sums.collect())


def arm_metrics(records: dict, *, victim: str, bursts: dict) -> dict:
    """Job, stage and task figures of one arm's measured jobs (see the report for definitions).

    ``bursts`` maps each starved executor to its bursts' (start, end) epoch ms. A straggler is
    *foreseeable* when it was launched while its own node was in a burst: the only stragglers a
    launch-time reading of node counters can foretell, so their share is the ceiling of any TPR here.
    """
    jobs = records["job"].to_pandas()
    stages = records["stage"].to_pandas()
    tasks = records["task"].to_pandas()
    holds = records["wrangler_hold"].to_pandas()
    job_s = ((jobs["completionTime"] - jobs["submissionTime"]) / 1000).tolist()
    stage_s = ((stages["completionTime"] - stages["submissionTime"]) / 1000).tolist()
    submitted = stages.set_index(["stageId", "stageAttempt"])["submissionTime"]
    queue = (tasks["launchTime"] - submitted.reindex(pd.MultiIndex.from_frame(tasks[["stageId", "stageAttempt"]]))
             .to_numpy()) / 1000
    on_victim = (tasks["executorId"] == victim).to_numpy()
    in_burst = np.zeros(len(tasks), bool)
    for executor, spans in bursts.items():
        mine = (tasks["executorId"] == executor).to_numpy()
        for start, end in spans:
            in_burst |= mine & (tasks["launchTime"] >= start).to_numpy() & (tasks["launchTime"] < end).to_numpy()
    labelled = label_tasks(tasks)
    straggler = labelled["straggler"].reindex(tasks.index, fill_value=False).to_numpy(bool)
    return {
        "jobs": len(jobs), "job_s": job_s, "stage_s": stage_s,
        "task_seconds": float(tasks["durationMs"].sum() / 1000), "task_attempts": len(tasks),
        "speculative_attempts": int(tasks["speculative"].sum()),
        "median_task_s": float(tasks["durationMs"].median() / 1000),
        "queue_delay_p50_s": float(np.nanmedian(queue)), "queue_delay_p90_s": float(np.nanpercentile(queue, 90)),
        "victim_task_fraction": float(on_victim.mean()),
        "victim_tasks_launched_in_bursts": int((on_victim & in_burst).sum()),
        "tasks_launched_in_bursts": int(in_burst.sum()),
        "straggler_fraction": float(labelled["straggler"].mean()),
        "stragglers": int(straggler.sum()), "foreseeable_stragglers": int((straggler & in_burst).sum()),
        "holds": len(holds), "held_s": float(holds["durationMs"].sum() / 1000) if len(holds) else 0.0,
        "held_executors": sorted(holds["executorId"].unique().tolist()) if len(holds) else [],
    }


def percentiles(values) -> dict:
    """p50, p99 and mean of ``values`` (p99 of a few dozen values is close to their maximum)."""
    return {"p50": float(np.percentile(values, 50)), "p99": float(np.percentile(values, 99)),
            "mean": float(np.mean(values))}
