"""Yaq for shared Spark drivers: a job gate that releases the least remaining work first (seed 001, ch. 2-4).

Yaq queues work at the nodes of a YARN cluster and reorders the queues by job; a Spark driver that
runs many jobs at once has one queue of its own, its jobs, and the same remedy applies there. One
flow, one module per step:

1. **report** (:class:`~spark_plugin.job_history.JobHistory`): each finished job's task-seconds and
   tasks, by shape (a name, a job group, or a SQL text without its literals);
2. **estimate**: the shape's weighted mean work; its length alone on the cluster; and, for work
   waiting on busy slots, :func:`.waiting.queue_wait` (Algorithm 2);
3. **order** (:mod:`.order`): starved jobs first (waited past ``min(ST, ST_r x length)``), then
   ``srjf``, ``lrtf`` or ``fifo`` (Algorithm 3);
4. **gate** (:class:`.gate.JobGate`, the Spark side): at most ``spark.yaq.maxInFlight`` jobs run,
   the others wait in that order; with Pigeon's pools (:mod:`spark_plugin.pigeon`) each runs in the
   short or long pool.

Steps 1-3 import no Spark; the gate reaches Spark only through the session it is given.
"""

from .gate import Admission, JobGate
from .order import POLICIES, Waiting, release_order, starved
from .waiting import queue_wait

__all__ = ["POLICIES", "Admission", "JobGate", "Waiting", "queue_wait", "release_order", "starved"]
