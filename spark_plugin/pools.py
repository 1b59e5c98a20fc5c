"""FAIR scheduler pools created at run time, so a job's share of the executors can change per epoch.

Spark fixes a pool's ``minShare`` and ``weight`` when the pool is created (from the allocation
file or, for an unknown name, with defaults 0 and 1). Rotary and SLAQ re-decide every job's cores
every epoch, so each (job, cores) pair gets its own pool, added to the root pool through py4j on
first use; a job switches pools by setting the ``spark.scheduler.pool`` local property of its
thread. Pools are never removed: a few dozen idle pools cost the scheduler nothing measurable.
"""

from __future__ import annotations

import threading

_lock = threading.Lock()


def fair_scheduling(sc) -> bool:
    """Whether ``sc`` runs with ``spark.scheduler.mode=FAIR`` (pools only share cores then)."""
    return sc.getConf().get("spark.scheduler.mode", "FIFO").upper() == "FAIR"


def fair_pool(sc, prefix: str, cores: int) -> str:
    """The name of a FAIR pool with ``minShare = weight = cores``, created on first use.

    ``prefix`` names the job (e.g. ``"rotary-q5"``); the pool is ``<prefix>-<cores>``.
    """
    cores = max(int(cores), 1)
    name = f"{prefix}-{cores}"
    root = sc._jsc.sc().taskScheduler().rootPool()
    with _lock:  # two threads creating the same pool would add it twice
        if root.getSchedulableByName(name) is None:
            jvm = sc._jvm
            root.addSchedulable(jvm.org.apache.spark.scheduler.Pool(
                name, jvm.org.apache.spark.scheduler.SchedulingMode.FAIR(), cores, cores))
    return name
