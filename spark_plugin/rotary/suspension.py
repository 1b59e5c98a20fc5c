"""Suspend a running progressive query at its next step boundary, and resume it anywhere (Riveter).

>>> run = SuspendableQuery(ProgressiveQuery(spark, 5, data), "/tmp/q5")
>>> threading.Timer(3.0, run.request_suspend).start()   # e.g. a spot-instance notice
>>> outcome = run.run()          # a Snapshot when it finished, a Suspension when it stopped
>>> ProgressiveQuery.resume(other_spark, outcome.path)  # later, on any cores: the same final answer

A step boundary is a pipeline breaker: the state is the running totals alone (O(groups)), written as
a checkpoint. A request arriving during a Spark query waits for that query to end, which with growing
chunks can be most of the run; ``request_suspend(cancel_running=True)`` cancels that query instead (its
work is done again after resuming: ``discarded_s``). The *lag* (request to state on disk) is recorded,
with the state's size and the time to write it. Batches the last Spark
query computed but the query has not delivered yet are folded in first (no Spark work), so nothing
computed is thrown away (and if those were the last batches, the run ends with its exact answer).

Given a :class:`.riveter.TerminationWindow`, the query also suspends by itself at the first breaker
where Riveter's cost model (:func:`.riveter.choose`) finds suspending cheaper than running on; every
decision is kept in :attr:`SuspendableQuery.decisions`.
"""

from __future__ import annotations

import math
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import riveter
from .engine import ProgressiveQuery, Snapshot


@dataclass(frozen=True)
class Suspension:
    path: Path  # the checkpoint: ProgressiveQuery.resume(spark, path)
    reason: str  # "requested" or "cost model"
    batches_done: int
    elapsed_s: float  # the query's processing time when it stopped
    lag_s: float  # request (or decision) to state on disk
    write_s: float  # of which writing the checkpoint
    discarded_s: float  # work of a cancelled Spark query, redone after resuming
    state_bytes: int  # bytes on disk
    groups: int


class SuspendableQuery:
    """Runs a :class:`ProgressiveQuery` to its end, or until a suspension is asked for or pays.

    ``clock`` (seconds, any origin; default ``time.perf_counter``) times the request, the write and
    discarded work of a suspension; tests pass a clock they move.
    """

    def __init__(self, query: ProgressiveQuery, checkpoint_path, *, window: riveter.TerminationWindow | None = None,
                 disk: riveter.DiskSpeed | None = None, free_memory: float = math.inf,
                 clock: Callable[[], float] = time.perf_counter):
        self.query = query
        self.clock = clock
        self.path = Path(checkpoint_path)
        self.window = window
        self.disk = disk or (riveter.DiskSpeed.measure(self.path.parent) if window else None)
        self.free_memory = free_memory
        self.decisions: list[tuple[float, riveter.Decision]] = []  # (query time, decision) per breaker
        self._requested_at: float | None = None
        self._cancelling = False
        self._discarded_s = 0.0
        self._stopped = threading.Event()
        self._canceller: threading.Thread | None = None
        self._lock = threading.Lock()
        self.job_group = f"rotary-suspendable-{id(self)}"  # the Spark job group its queries run in

    @property
    def requested_at(self) -> float | None:
        """When a suspension was asked for (on :attr:`clock`), if it was."""
        return self._requested_at

    def request_suspend(self, cancel_running: bool = False) -> None:
        """Ask the query to stop at its next step boundary, or with ``cancel_running`` at once, giving
        up the Spark query in flight (safe from any thread)."""
        with self._lock:
            if self._requested_at is None:
                self._requested_at = self.clock()
            if cancel_running and not self._cancelling:
                self._cancelling = True
                self._canceller = threading.Thread(target=self._cancel_until_stopped, daemon=True)
                self._canceller.start()

    def _cancel_until_stopped(self) -> None:
        """Cancel the run's jobs until it reaches its boundary: a query may start another job (after a
        broadcast, say) between two cancellations."""
        sc = self.query.spark.sparkContext
        tracker = sc.statusTracker()
        while not self._stopped.is_set():
            jobs = [tracker.getJobInfo(j) for j in tracker.getJobIdsForGroup(self.job_group)]
            if any(job is not None and job.status == "RUNNING" for job in jobs):  # else Spark logs a warning
                sc.cancelJobGroup(self.job_group)
            self._stopped.wait(0.05)

    def run(self, on_snapshot=None) -> Snapshot | Suspension:
        sc = self.query.spark.sparkContext
        previous_group = sc.getLocalProperty("spark.jobGroup.id")
        sc.setJobGroup(self.job_group, f"{self.query.spec.name}, suspendable")
        try:
            return self._run(on_snapshot)
        finally:
            self._stopped.set()
            sc.setLocalProperty("spark.jobGroup.id", previous_group)

    def _run(self, on_snapshot) -> Snapshot | Suspension:
        snapshot = None
        while not self.query.done:
            if self._requested_at is not None:
                return self._suspend("requested", self._requested_at)
            if self.window is not None and self._cost_model_suspends():
                return self._suspend("cost model", self.clock())
            start = self.clock()
            with warnings.catch_warnings(record=True) as caught:
                try:
                    snapshot = self.query.step()
                except Exception:
                    if not self._cancelling:
                        raise
                    self._discarded_s += self.clock() - start  # cancelled on request: suspend next
                    continue  # (pyspark's warning about the failed Arrow collection is dropped with it)
            for w in caught:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            if on_snapshot:
                on_snapshot(snapshot)
        return snapshot if snapshot is not None else self.query.snapshot()

    def _cost_model_suspends(self) -> bool:
        q = self.query
        per_batch_s = q.elapsed_s / q.batches_done if q.batches_done else 0.0
        decision = riveter.choose(q.elapsed_s, per_batch_s * q.next_query_batches, q.state_bytes, self.window,
                                  self.disk, self.free_memory)
        self.decisions.append((q.elapsed_s, decision))
        return decision.strategy == riveter.PIPELINE

    def _suspend(self, reason: str, since: float) -> Suspension | Snapshot:
        self._stopped.set()  # the boundary: folding in ready batches may look up attributes (a Spark job)
        if self._canceller is not None:
            self._canceller.join()
        while self.query.batches_ready:  # computed already: fold in, do not recompute after resuming
            self.query.step()
        if self.query.done:  # those were the last: nothing left to suspend
            return self.query.snapshot()
        write_start = self.clock()
        path = self.query.checkpoint(self.path)
        done = self.clock()
        self.query.close()
        size = sum(f.stat().st_size for f in path.iterdir())
        return Suspension(path, reason, self.query.batches_done, self.query.elapsed_s, done - since,
                          done - write_start, self._discarded_s, size, self.query.groups)
