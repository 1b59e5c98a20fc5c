"""Concurrent approximate jobs in one Spark application, with cores re-arbitrated every epoch.

The loop (thesis Algorithm 3/4): at each epoch boundary, admit the jobs that arrived, ask the
policy for cores among the jobs whose epoch ended, checkpoint to disk the jobs that lost their
cores (and resume those that got some back), then run every granted job for one epoch in its own
thread. After each batch a job's envelope estimate is checked against its criterion; attained and
unattained jobs leave.

Cores are enforced per job and epoch: the job's queries run with ``spark.sql.shuffle.partitions`` and
``spark.sql.files.maxPartitionNum`` equal to its cores (its own SQL session), so no stage is wider than
its grant, and, under ``spark.scheduler.mode=FAIR``, in a capped scheduler pool created at run time
(:func:`..pools.fair_pool`: ``minShare`` and ``weight`` equal to its cores, and a stage offered only when
all its tasks not yet started fit beside those running), so the job never runs more tasks at once than
its cores (checked from telemetry in the arbiter's tests and benchmark).

Memory (Algorithm 4): each job's estimated memory (:func:`.estimators.batch_input_bytes`) must fit the
budget ``memory`` with the jobs already granted, for policies that weigh memory; a job that does not fit
waits. ``peak_memory`` records the most granted at once, and each job's record its ``memory_waits``.

Rotary's adaptive epochs: a job keeps its grant for ``round(memory / smallest memory)`` base epochs
(at most ``max_epoch_factor``), so heavy jobs report progress per unit of work like light ones.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..pools import fair_pool, fair_scheduling
from ..shared import criteria as crit
from .accuracy import Envelope, true_accuracy
from .batches import prepare
from .engine import CHECKPOINT, ProgressiveQuery, check_checkpoint
from .estimators import History, PastRun, ProgressEstimator, batch_input_bytes, features
from .policies import JobView, Policy
from .spec import batch_count, load
from .workload import WorkloadJob

LOG = logging.getLogger(__name__)


@dataclass
class ActiveJob:
    spec: WorkloadJob
    criterion: crit.Criterion
    memory: float = 0.0
    query: ProgressiveQuery | None = None  # None while paused on disk or not started
    checkpoint: Path | None = None
    cores: int = 0
    epochs_left: int = 0
    epochs: int = 0
    envelope: Envelope | None = None
    estimate: float = 0.0
    previous: float | None = None
    gains: list = field(default_factory=list)
    live: list = field(default_factory=list)  # (processing seconds, estimate) pairs
    processing_s: float = 0.0
    batches_done: int = 0
    last_result: object = None
    checkpoints: int = 0
    memory_waits: int = 0  # arbitrations it sat out because its memory did not fit what was left
    waits: int = 0  # arbitrations it sat out, for any reason
    admitted_s: float = 0.0  # the loop's time at the boundary that admitted it (its arrival or after)


class Arbiter:
    def __init__(self, spark, data, policy: Policy, *, batches: int = 20, cores: int | None = None,
                 memory: float | None = None, epoch_s: float = 2.0, window: int = 3, max_epoch_factor: int = 3,
                 checkpoint_dir, history: History | None = None, exact_answers: dict | None = None,
                 progress=None, clock: Callable[[], float] = time.perf_counter,
                 sleep: Callable[[float], None] = time.sleep):
        self.spark, self.data, self.policy, self.batches = spark, data, policy, batch_count(batches)
        #: Seconds (any origin) that arrivals, epochs, deadlines and records are decided by, and how the loop
        #: waits for the next arrival; tests may pass their own.
        self.clock, self.sleep = clock, sleep
        self.cores = cores or spark.sparkContext.defaultParallelism
        self.memory = float("inf") if memory is None else memory
        self.epoch_s, self.window, self.max_epoch_factor = epoch_s, window, max_epoch_factor
        self.checkpoint_dir = Path(checkpoint_dir)
        self.estimator = ProgressEstimator(history)
        self.history = history
        self.progress = progress or (lambda event: None)
        self.fair = fair_scheduling(spark.sparkContext)
        _quiet_scan_rescaling(spark.sparkContext)
        if not self.fair:
            LOG.warning("spark.scheduler.mode is not FAIR: cores are enforced by per-job parallelism only")
        self.overhead_s = 0.0
        self.peak_memory = 0.0  # the most estimated memory granted at once (never above ``memory``)
        #: Exact answers per query, for true accuracy only; pass one dict to several arbiters to compute them once.
        self._exact = {} if exact_answers is None else exact_answers

    # -- the loop ------------------------------------------------------------------------------
    def run(self, workload: list[WorkloadJob]) -> list[dict]:
        """Run ``workload`` to the end; one record per job (see :meth:`_record`)."""
        for j in workload:  # before any work: a job's checkpoint may replace only a checkpoint of Rotary's
            check_checkpoint(self.checkpoint_dir / j.job_id)
        for q in sorted({j.query for j in workload} - set(self._exact)):
            self._exact[q] = ProgressiveQuery(self.spark, q, self.data.data, self.batches, self.data.seed).exact()
        pending = sorted(workload, key=lambda j: j.arrival_s)
        active: dict[str, ActiveJob] = {}
        records = []
        start = self.clock()
        while pending or active:
            now = self.clock() - start
            while pending and pending[0].arrival_s <= now:
                job = self._admit(pending.pop(0))
                job.admitted_s = now
                active[job.spec.job_id] = job
            if not active:
                self.sleep(max(0.0, min(self.epoch_s, pending[0].arrival_s - now)))
                continue
            tick = self.clock()
            self._arbitrate(active, now)
            self.overhead_s += self.clock() - tick
            running = [j for j in active.values() if j.cores > 0]
            threads = [threading.Thread(target=self._run_epoch, args=(j, start), name=j.spec.job_id) for j in running]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if not running:
                self.sleep(self.epoch_s)
            now = self.clock() - start
            for job in list(active.values()):
                status = self._status(job, now)
                if status != crit.RUNNING:
                    records.append(self._finish(job, status, now))
                    del active[job.spec.job_id]
            self.progress({"time_s": now, "active": len(active), "pending": len(pending), "done": len(records)})
        return records

    def _admit(self, spec: WorkloadJob) -> ActiveJob:
        job = ActiveJob(spec, crit.accuracy(spec.threshold, seconds=spec.deadline_s))
        job.envelope = Envelope(load(spec.query), self.window)
        prepare(self.spark, self.data.data, self.batches, self.data.seed, layouts=(job.envelope.spec.layout,))
        job.memory = batch_input_bytes(job.envelope.spec, self.data)
        if self.policy.uses_memory and job.memory > self.memory:
            LOG.warning("%s (Q%s) needs an estimated %.0f MB, more than the whole memory budget of %.0f MB: "
                        "it will wait until its deadline; raise the budget to run it", spec.job_id, spec.query,
                        job.memory / 1e6, self.memory / 1e6)
        return job

    def _arbitrate(self, active: dict, now: float) -> None:
        held = [j for j in active.values() if j.epochs_left > 0]
        deciding = [j for j in active.values() if j.epochs_left == 0]
        free_cores = self.cores - sum(j.cores for j in held)
        free_memory = self.memory - sum(j.memory for j in held)
        smallest = min(j.memory for j in active.values()) or 1.0
        grant = self.policy.allocate([self._view(j, now, smallest) for j in deciding], free_cores, free_memory)
        memory_left = free_memory - sum(j.memory for j in deciding if grant.get(j.spec.job_id))
        for job in deciding:
            cores = grant.get(job.spec.job_id, 0)
            if cores == 0 and job.query is not None:
                self._pause(job)
            if cores == 0:
                job.waits += 1
            if cores == 0 and self.policy.uses_memory and job.memory > memory_left:
                job.memory_waits += 1
            job.cores = cores
            if cores:
                job.epochs_left = self._epoch_factor(job, smallest)
        self.peak_memory = max(self.peak_memory, sum(j.memory for j in active.values() if j.cores))

    def _epoch_factor(self, job: ActiveJob, smallest_memory: float) -> int:
        """Base epochs a grant lasts: 1, or with adaptive epochs ``memory / smallest`` (capped)."""
        if not self.policy.adaptive_epochs:
            return 1
        return max(1, min(self.max_epoch_factor, round(job.memory / smallest_memory)))

    def _view(self, job: ActiveJob, now: float, smallest_memory: float) -> JobView:
        feats = features(job.envelope.spec, self.batches)
        whole_run_s = (job.processing_s * self.batches / job.batches_done if job.batches_done
                       else self.estimator.run_length_s(feats))
        needed = (self.estimator.time_to(feats, job.live, job.spec.threshold, whole_run_s)
                  if whole_run_s is not None else None)
        next_epoch_s = self.epoch_s * self._epoch_factor(job, smallest_memory)
        predictable = job.live or whole_run_s is not None
        next_estimate = (self.estimator.predict(feats, job.live, job.processing_s + next_epoch_s)
                         if predictable else None)
        return JobView(job.spec.job_id, job.spec.arrival_s, job.spec.arrival_s + job.spec.deadline_s,
                       job.spec.threshold, job.memory, job.estimate, job.gains[-1] if job.gains else None,
                       now_s=now, processing_s=job.processing_s, needed_s=needed, next_estimate=next_estimate,
                       next_epoch_s=next_epoch_s)

    # -- one job's epoch (in its own thread) ------------------------------------------------------
    def _run_epoch(self, job: ActiveJob, start: float) -> None:
        if job.query is None:
            job.query = (ProgressiveQuery.resume(self.spark, job.checkpoint) if job.checkpoint
                         else ProgressiveQuery(self.spark, job.spec.query, self.data.data, self.batches, self.data.seed,
                                               growth=1))  # a batch per Spark query: epochs stay short
        session = job.query.spark
        session.conf.set("spark.sql.shuffle.partitions", str(job.cores))
        session.conf.set("spark.sql.files.maxPartitionNum", str(job.cores))  # scans as wide as the grant too
        sc = session.sparkContext
        sc.setJobGroup(f"rotary-{job.spec.job_id}-{job.epochs}-c{job.cores}", f"{job.spec.job_id} epoch {job.epochs}")
        if self.fair:
            sc.setLocalProperty("spark.scheduler.pool", fair_pool(sc, f"rotary-{job.spec.job_id}", job.cores,
                                                                     cap=True))
        epoch_end = self.clock() + self.epoch_s
        before = job.estimate
        while not job.query.done:
            snapshot = job.query.step()
            job.processing_s, job.batches_done = job.query.elapsed_s, job.query.batches_done
            job.last_result = snapshot.result
            job.previous, job.estimate = job.estimate, job.envelope.add(snapshot.result)
            job.live.append((job.processing_s, job.estimate))
            if self._status(job, self.clock() - start) != crit.RUNNING or self.clock() >= epoch_end:
                break
        job.gains.append(job.estimate - before)
        job.epochs += 1
        job.epochs_left -= 1

    def _pause(self, job: ActiveJob) -> None:
        job.checkpoint = self.checkpoint_dir / job.spec.job_id
        job.query.checkpoint(job.checkpoint)
        job.query.close()
        job.query = None
        job.checkpoints += 1

    # -- ending -------------------------------------------------------------------------------
    def _status(self, job: ActiveJob, now: float) -> str:
        done = job.query is not None and job.query.done
        return job.criterion.status(crit.Progress(now - job.spec.arrival_s, job.epochs, job.estimate, job.previous,
                                                  complete=done))

    def _finish(self, job: ActiveJob, status: str, now: float) -> dict:
        spec = job.envelope.spec
        truth = (true_accuracy(job.last_result, self._exact[job.spec.query], spec)
                 if job.last_result is not None else 0.0)
        if self.history is not None and job.live:
            self.history.add(PastRun(features(spec, self.batches), [list(p) for p in job.live]))
        if job.checkpoint:
            CHECKPOINT.remove(job.checkpoint)
        if job.query is not None:
            job.query.close()
        return self._record(job, status, now, truth)

    def _record(self, job: ActiveJob, status: str, now: float, truth: float) -> dict:
        s = job.spec
        return {"job_id": s.job_id, "query": s.query, "kind": s.kind, "threshold": s.threshold,
                "deadline_s": s.deadline_s, "arrival_s": s.arrival_s, "status": status,
                "finish_s": now, "turnaround_s": now - s.arrival_s, "processing_s": job.processing_s,
                "waiting_s": max(0.0, now - s.arrival_s - job.processing_s), "epochs": job.epochs,
                "batches_done": job.batches_done, "estimate": job.estimate, "true_accuracy": float(truth),
                "false_attainment": bool(status == crit.ATTAINED and truth < s.threshold),
                "checkpoints": job.checkpoints, "memory_bytes": job.memory, "memory_waits": job.memory_waits,
                "waits": job.waits, "admitted_s": job.admitted_s}


def _quiet_scan_rescaling(sc) -> None:
    """Spark warns on every scan it narrows to ``spark.sql.files.maxPartitionNum``, which the arbiter sets
    on purpose for every epoch: keep that one logger to errors."""
    log4j = sc._jvm.org.apache.logging.log4j
    log4j.core.config.Configurator.setLevel("org.apache.spark.sql.execution.datasources.FilePartition",
                                            log4j.Level.ERROR)
