"""Thread-local Spark properties set for a block of code and put back afterwards.

A Spark local property (job group, FAIR pool, per-job settings) applies to every later job of the
thread that set it. Helpers that set them for one piece of work (Riffle's per-job settings, a SLAQ
fit) restore the caller's values when the work ends, also on an error.
"""

from __future__ import annotations

from contextlib import contextmanager

#: What routes a thread's jobs: their job group (id, description, interrupt on cancel) and FAIR pool.
JOB_GROUP_AND_POOL = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel",
                      "spark.scheduler.pool")


@contextmanager
def restored(sc, names):
    """Run the block, then give the local properties ``names`` of this thread their values from before it."""
    previous = {name: sc.getLocalProperty(name) for name in names}
    try:
        yield
    finally:
        for name, value in previous.items():
            sc.setLocalProperty(name, value)
