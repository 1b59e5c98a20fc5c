"""Who gets cores next epoch: Rotary's Algorithm 4 and the baselines, behind one interface.

Every policy is an order of jobs for their first core and, for some, an order for one extra core each;
the shared utility allocator (:mod:`spark_plugin.utility`) hands the cores out by those orders as
utilities, the same allocator SLAQ uses.

A policy sees the jobs whose epoch just ended (:class:`JobView`) and the cores and memory not held
by jobs still inside their epoch, and returns cores per job (absent or 0: paused this epoch).

* :class:`Rotary` (Algorithm 4 as written): every job whose estimated memory fits the memory left gets
  one core, in arrival order while cores last (the author's code; the pseudo-code leaves the order
  open when cores are short); a job that does not fit waits (deferred, not dropped); the cores left
  go one extra each to the served jobs in priority-queue order, highest predicted progress first.
  The predicted progress (phi-hat) is the envelope accuracy the progress estimator predicts at the
  end of the job's next epoch, as a fraction of its threshold (capped at 1).
* :class:`RotaryDeadline`: Algorithm 4 with our queue instead of phi-hat, which serves the queue
  for the first cores too: first the jobs the progress estimator predicts will reach their
  threshold before their deadline, earliest deadline first, last those it predicts will miss it
  (serving a job that cannot attain only delays others). It attained more jobs than arrival order
  on overloaded cores (see ``benchmarks/results/rotary``).
* :class:`RotaryRandom`: Algorithm 4 with a U(0, 1) estimator instead of phi-hat (the thesis's
  estimator ablation, Fig. 3.9).
* :class:`RoundRobin`: one core per job, taking turns.
* :class:`EDF`: one core per job, earliest deadline first.
* :class:`LAF`: one core per job, least estimated accuracy first.
* :class:`ReLAQS`: CPU only; priority is the accuracy gained in the job's latest epoch (recent
  results only, no history); one core each by priority, then one extra each in that order.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from ..utility import Claim, allocate, by_priority


@dataclass(frozen=True)
class JobView:
    job_id: str
    arrival_s: float
    deadline_s: float | None  # absolute (arrival + budget), None if none
    threshold: float | None
    memory: float  # estimated bytes
    estimate: float  # envelope accuracy now
    recent_gain: float | None  # estimate gained in its latest epoch (None before its second)
    now_s: float = 0.0  # when the decision is taken, on the deadline's clock
    processing_s: float = 0.0  # runtime the job has had so far
    needed_s: float | None = None  # predicted runtime to meet its threshold (None: nothing to predict from)
    next_estimate: float | None = None  # predicted envelope accuracy after its next epoch (None: nothing to predict)

    @property
    def slack_s(self) -> float | None:
        """Time to spare before the deadline if the job ran from now on until it attains.

        Negative: predicted to miss its deadline. ``None``: nothing to predict from. Infinite
        without a deadline.
        """
        if self.needed_s is None:
            return None
        if self.deadline_s is None:
            return math.inf
        return (self.deadline_s - self.now_s) - max(0.0, self.needed_s - self.processing_s)


class Policy:
    name = "policy"
    uses_memory = True
    adaptive_epochs = False
    uses_history = False  # whether its estimates read past runs (the benchmark fills a history for it)

    def allocate(self, jobs: list[JobView], cores: int, memory: float) -> dict[str, int]:
        raise NotImplementedError

    def _grant(self, first: list[JobView], cores: int, memory: float, extra: list[JobView] | None = None) -> dict:
        """One core per job in ``first`` order while cores last, skipping jobs whose memory does not fit,
        then, with ``extra``, one more each to the served jobs in ``extra`` order: the order as utilities
        (:func:`spark_plugin.utility.by_priority`), handed out by the shared max-sum allocator."""
        tables = by_priority([j.job_id for j in first], None if extra is None else [j.job_id for j in extra])
        claims = [Claim(j.job_id, tables[j.job_id], max_units=1 if extra is None else 2,
                        memory=j.memory if self.uses_memory else 0.0) for j in first]
        grant = allocate(claims, cores, memory=memory if self.uses_memory else math.inf)
        return {job: n for job, n in grant.items() if n}


class Rotary(Policy):
    name = "rotary"
    adaptive_epochs = True
    uses_history = True

    def allocate(self, jobs, cores, memory):
        return self._grant(sorted(jobs, key=lambda j: j.arrival_s), cores, memory,
                           extra=sorted(jobs, key=lambda j: (-self.phi_hat(j), j.arrival_s)))

    def phi_hat(self, job: JobView) -> float:
        """Predicted progress toward the criterion at the end of the job's next epoch (0 with nothing
        to predict from)."""
        if job.next_estimate is None:
            return 0.0
        return min(1.0, job.next_estimate / job.threshold) if job.threshold else job.next_estimate


class RotaryDeadline(Rotary):
    name = "rotary-deadline"

    def allocate(self, jobs, cores, memory):
        queue = sorted(jobs, key=lambda j: (self.priority(j), j.arrival_s))
        return self._grant(queue, cores, memory, extra=queue)

    def priority(self, job: JobView) -> tuple:
        """Queue key, smallest first: jobs with nothing to predict from (explored), then those
        predicted to attain, earliest deadline first, then those predicted to miss, nearest miss first.

        Deadline order among the attainable keeps the queue stable from epoch to epoch, so a running
        job is rarely preempted (each preemption costs a checkpoint and a resume); ordering by
        slack instead makes waiting jobs overtake running ones over and over.
        """
        slack = job.slack_s
        if slack is None:
            return (0, 0.0)
        return (1, _deadline(job)) if slack >= 0 else (2, -slack)


class RotaryRandom(Rotary):
    name = "rotary-random"
    uses_history = False

    def __init__(self, seed: int = 0):
        self._rng = random.Random(seed)

    def phi_hat(self, job: JobView) -> float:
        return self._rng.random()


class RoundRobin(Policy):
    name = "rr"

    def __init__(self):
        self._served: dict[str, int] = {}  # job -> epochs granted so far

    def allocate(self, jobs, cores, memory):
        ordered = sorted(jobs, key=lambda j: (self._served.get(j.job_id, 0), j.arrival_s))
        grant = self._grant(ordered, cores, memory)
        for job_id in grant:
            self._served[job_id] = self._served.get(job_id, 0) + 1
        return grant


class EDF(Policy):
    name = "edf"

    def allocate(self, jobs, cores, memory):
        return self._grant(sorted(jobs, key=lambda j: (_deadline(j), j.arrival_s)), cores, memory)


class LAF(Policy):
    name = "laf"

    def allocate(self, jobs, cores, memory):
        return self._grant(sorted(jobs, key=lambda j: (j.estimate, j.arrival_s)), cores, memory)


class ReLAQS(Policy):
    name = "relaqs"
    uses_memory = False

    def allocate(self, jobs, cores, memory):
        # A job without two epochs yet has unknown potential: serve it first, as ReLAQS explores.
        ordered = sorted(jobs, key=lambda j: (-(math.inf if j.recent_gain is None else j.recent_gain), j.arrival_s))
        return self._grant(ordered, cores, memory, extra=ordered)


def _deadline(job: JobView) -> float:
    return job.deadline_s if job.deadline_s is not None else math.inf


POLICIES = {p.name: p for p in (Rotary, RotaryDeadline, RoundRobin, EDF, LAF, ReLAQS, RotaryRandom)}


def make(name: str) -> Policy:
    try:
        return POLICIES[name]()
    except KeyError:
        raise ValueError(f"unknown arbitration policy {name!r}; choose from {', '.join(POLICIES)}") from None
