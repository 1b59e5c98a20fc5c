"""Who gets cores next epoch: Rotary's Algorithm 4 and the baselines, behind one interface.

Every policy is an order of jobs for their first core and, for some, an order for one extra core each;
the shared utility allocator (:mod:`spark_plugin.shared.utility`) hands the cores out by those orders as
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
* :class:`UtilitySum` and :class:`UtilityMin` (VideoStorm's decision layer, seed 000): every job states
  its utility for 0, 1 or 2 cores next epoch, the template ``progress - lateness / budget`` of
  :class:`spark_plugin.shared.utility.Utility` over the progress it is predicted to make and the lateness it is
  predicted to have at its deadline (model-predictive over one epoch, corrected by the job's own running
  ratio of actual to predicted demand); the allocator maximizes the total (max-sum) or the worst job's
  utility (max-min). :class:`ProgressSum` and :class:`ProgressMin` leave the lateness out.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np

from ..shared.utility import (
    Claim,
    DemandCorrection,
    Utility,
    allocate,
    by_priority,
    predicted_lag,
)


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
    next_epoch_s: float = 0.0  # how long its next epoch lasts if granted (the arbiter's epoch, or a multiple)

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
        (:func:`spark_plugin.shared.utility.by_priority`), handed out by the shared max-sum allocator."""
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
        return 0.0 if job.next_estimate is None else _progress(job, job.next_estimate)


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


class UtilitySum(Policy):
    """Cores by VideoStorm's utility of each job's predicted progress and lateness, max-sum.

    A job's utility with ``u`` cores next epoch is ``Q(u) - L(u) / budget`` (the template
    ``Utility(max_lag_s=0, alpha_lag=1 / budget)``, budget = deadline - arrival), with

    * ``Q(u)``: its progress toward the threshold (estimate / threshold, at most 1) after the epoch,
      ``Q(0) + u * gain / mu``, where ``gain`` is what the progress estimator predicts one core's epoch adds
      (a job with nothing to predict from is taken to reach its threshold, so it is tried once);
    * ``L(u)``: the lateness it is predicted to have at its deadline after the epoch, model-predictive over
      one epoch (:func:`spark_plugin.shared.utility.predicted_lag`): a job needs one core to keep its predicted
      finish, falls one epoch further behind without one and catches up with two. Zero while it is
      predicted to finish in time, so waiting costs a job with slack nothing;
    * ``mu``: the job's running ratio of actual to predicted demand (:class:`DemandCorrection`), from
      the progress its epochs were predicted to make against what they made: a job whose epochs add
      half what was predicted needs twice the cores the model says.

    Lateness is weighed by the job's own budget, so a job a whole budget late costs as much as a
    job's whole progress (``lag_weight`` 1; the ``-progress`` variants weigh it 0: progress alone).
    """

    name = "utility-sum"
    uses_history = True  # its predictions come from the progress estimator, as rotary-deadline's do
    objective = "sum"
    max_cores = 2
    lag_weight = 1.0

    def __init__(self):
        self._demand: dict[str, DemandCorrection] = {}
        self._predicted: dict[str, tuple[float, float]] = {}  # job -> (progress when granted, predicted gain)

    def allocate(self, jobs, cores, memory):
        for job in jobs:
            self._correct(job)
        claims = [Claim(j.job_id, self.utilities(j), max_units=self.max_cores, memory=j.memory) for j in jobs]
        grant = {job: n for job, n in allocate(claims, cores, objective=self.objective, memory=memory).items() if n}
        for job in jobs:
            if job.job_id in grant:
                self._predicted[job.job_id] = (_progress(job, job.estimate), grant[job.job_id] * self._gain(job))
        return grant

    def utilities(self, job: JobView) -> list[float]:
        """The job's utility with 0, 1, ... ``max_cores`` cores next epoch."""
        mu = self.mu(job.job_id)
        cores = np.arange(self.max_cores + 1)
        progress = np.minimum(1.0, _progress(job, job.estimate) + cores * self._gain(job) / mu)
        slack = job.slack_s
        late = (np.zeros(cores.shape) if slack is None or math.isinf(slack)
                else predicted_lag(-slack, job.next_epoch_s, cores, demand=1.0, mu=mu))
        budget = max(job.deadline_s - job.arrival_s, 1e-9) if job.deadline_s is not None else math.inf
        template = Utility(max_lag_s=0.0, alpha_lag=0.0 if math.isinf(budget) else self.lag_weight / budget)
        return [float(u) for u in template(progress, late)]

    def mu(self, job_id: str) -> float:
        """The job's demand correction: 1.0 until one of its epochs has been measured."""
        return self._demand[job_id].mu if job_id in self._demand else 1.0

    def _gain(self, job: JobView) -> float:
        now = _progress(job, job.estimate)
        if job.next_estimate is None:
            return 1.0 - now  # nothing to predict from: optimistic, so the job is tried
        return max(0.0, _progress(job, job.next_estimate) - now)

    def _correct(self, job: JobView) -> None:
        """Compares the progress the job's last granted epoch made with what was predicted."""
        if job.job_id not in self._predicted:
            return
        before, predicted = self._predicted.pop(job.job_id)
        now = _progress(job, job.estimate)
        if predicted <= 0 or now >= 1.0:
            return  # nothing was predicted, or the cap at the threshold hides what the epoch could add
        made = now - before
        # Demand is cores per unit of progress: actual / predicted = predicted gain / actual gain (<= 4x).
        self._demand.setdefault(job.job_id, DemandCorrection()).update(
            actual=1.0 / max(made, predicted / 4), predicted=1.0 / predicted)


class UtilityMin(UtilitySum):
    """:class:`UtilitySum`'s utilities, max-min: the job of lowest utility is served first."""

    name = "utility-min"
    objective = "min"


class ProgressSum(UtilitySum):
    """:class:`UtilitySum` on progress alone, max-sum: the largest predicted progress per core first."""

    name = "utility-sum-progress"
    lag_weight = 0.0


class ProgressMin(ProgressSum):
    """:class:`UtilitySum` on progress alone, max-min: the job furthest from its threshold first, so that
    the worst-served job is not the one predicted to be latest but the one least advanced."""

    name = "utility-min-progress"
    objective = "min"


def _progress(job: JobView, estimate: float) -> float:
    """An envelope estimate as progress toward the job's threshold (at most 1)."""
    return min(1.0, estimate / job.threshold) if job.threshold else estimate


def _deadline(job: JobView) -> float:
    return job.deadline_s if job.deadline_s is not None else math.inf


POLICIES = {p.name: p for p in (Rotary, RotaryDeadline, RoundRobin, EDF, LAF, ReLAQS, RotaryRandom, UtilitySum,
                                UtilityMin, ProgressSum, ProgressMin)}


def make(name: str) -> Policy:
    try:
        return POLICIES[name]()
    except KeyError:
        raise ValueError(f"unknown arbitration policy {name!r}; choose from {', '.join(POLICIES)}") from None
