"""Benchmarks of the scaling advisor (``python -m benchmarks.advisor``)."""

from __future__ import annotations


def round_order(settings: list, round_index: int) -> list:
    """The settings (executor counts) in the order a round runs them: as given in even rounds, reversed in odd
    ones, so a drift over the benchmark (a warming page cache, a neighbour) does not bend every curve alike."""
    return settings if round_index % 2 == 0 else settings[::-1]


def median_run(slots: int, runs, source: str = ""):
    """One setting's run over rounds: the median wall time and task count (stages of the first round);
    ``source`` names the setting."""
    import statistics

    from spark_plugin.advisor import Run

    return Run(slots=slots, tasks=round(statistics.median(r.tasks for r in runs)),
               wall_s=statistics.median(r.wall_s for r in runs), source=source, stage_tasks=runs[0].stage_tasks)


def cluster_of(master: str | None, executors: int) -> tuple[str, dict]:
    """The master and Spark settings of an application with ``executors`` one-core executors: an embedded
    local-cluster, or ``master`` (the emulated hosts, whose settings are added) capped at that many cores."""
    from benchmarks.cluster import conf_for_master
    from benchmarks.common import local_cluster_url

    if master is None:
        return local_cluster_url(executors), {}
    return master, {**conf_for_master(master), "spark.executor.cores": "1", "spark.cores.max": str(executors)}


def where(conf: dict) -> str:
    """Where a recorded result ran, for its report."""
    if conf.get("master"):
        return "the emulated hosts, one executor per host, each host its share of this 2-core machine's CPU"
    return "embedded local-cluster on this 2-core machine: executors past two share its cores"
