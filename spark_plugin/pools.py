"""FAIR scheduler pools created at run time, so a job's share of the executors can change per epoch.

Spark fixes a pool's ``minShare`` and ``weight`` when the pool is created (from the allocation
file or, for an unknown name, with defaults 0 and 1). Rotary and SLAQ re-decide every job's cores
every epoch, so each (job, cores) pair gets its own pool, added to the root pool through py4j on
first use; a job switches pools by setting the ``spark.scheduler.pool`` local property of its
thread. Pools are never removed: a few dozen idle pools cost the scheduler nothing measurable.

A *capped* pool (``cap=True``, the jar's ``dev.sparkrm.scheduler.CappedPool``) also runs at most
``cores`` tasks at once: Spark's pools have no maximum, so without it a job takes every idle slot. It
offers a stage only when all the stage's tasks not yet started fit under the cap (a stage may take every
slot of an offer round); a stage wider than the cap runs alone, so callers keep stages at most ``cores``
tasks wide.
"""

from __future__ import annotations

import threading

_lock = threading.Lock()


def fair_scheduling(sc) -> bool:
    """Whether ``sc`` runs with ``spark.scheduler.mode=FAIR`` (pools only share cores then)."""
    return sc.getConf().get("spark.scheduler.mode", "FIFO").upper() == "FAIR"


def fair_pool(sc, prefix: str, cores: int, cap: bool = False) -> str:
    """The name of a FAIR pool with ``minShare = weight = cores`` (and with ``cap``, at most ``cores``
    running tasks), created on first use.

    ``prefix`` names the job (e.g. ``"rotary-q5"``); the pool is ``<prefix>-<cores>``, or
    ``<prefix>-<cores>-capped``.
    """
    cores = max(int(cores), 1)
    return add_pool(sc, f"{prefix}-{cores}" + ("-capped" if cap else ""), cores, cores, cap=cores if cap else None)


def add_pool(sc, name: str, min_share: int, weight: int, *, cap: int | None = None) -> str:
    """Add FAIR pool ``name`` (FAIR inside; with ``cap``, a ``CappedPool``) to ``sc``'s root pool unless a pool
    of that name exists (created earlier, or read from the allocation file); returns ``name``."""
    root = sc._jsc.sc().taskScheduler().rootPool()
    with _lock:  # two threads creating the same pool would add it twice
        if root.getSchedulableByName(name) is None:
            jvm = sc._jvm
            fair = jvm.org.apache.spark.scheduler.SchedulingMode.FAIR()
            root.addSchedulable(jvm.dev.sparkrm.scheduler.CappedPool(name, fair, min_share, weight, cap)
                                if cap is not None else jvm.org.apache.spark.scheduler.Pool(name, fair, min_share, weight))
    return name
