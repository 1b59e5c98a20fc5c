"""Benchmarks of the scaling advisor (``python -m benchmarks.advisor``)."""


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
