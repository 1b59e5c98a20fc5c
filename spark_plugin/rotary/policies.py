"""Who gets cores next epoch: Rotary's Algorithm 4 and the baselines, behind one interface.

A policy sees the jobs whose epoch just ended (:class:`JobView`) and the cores and memory not held
by jobs still inside their epoch, and returns cores per job (absent or 0: paused this epoch).

* :class:`Rotary` (Algorithm 4): every job whose estimated memory fits gets one core, in arrival
  order while cores last; jobs that do not fit wait (deferred, not dropped); the cores left go one
  extra each to the jobs with the highest predicted progress toward their criterion.
* :class:`RoundRobin`: one core per job, taking turns.
* :class:`EDF`: one core per job, earliest deadline first.
* :class:`LAF`: one core per job, least estimated accuracy first.
* :class:`ReLAQS`: CPU only; priority is the accuracy gained in the job's latest epoch (recent
  results only, no history); one core each by priority, then one extra each in that order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class JobView:
    job_id: str
    arrival_s: float
    deadline_s: float | None  # absolute (arrival + budget), None if none
    threshold: float | None
    memory: float  # estimated bytes
    estimate: float  # envelope accuracy now
    predicted: float  # predicted accuracy at the end of its next epoch
    recent_gain: float | None  # estimate gained in its latest epoch (None before its second)

    @property
    def progress(self) -> float:
        """Predicted attainment progress: predicted accuracy over the threshold, at most 1."""
        return min(1.0, self.predicted / self.threshold) if self.threshold else self.predicted


class Policy:
    name = "policy"
    uses_memory = True
    adaptive_epochs = False

    def allocate(self, jobs: list[JobView], cores: int, memory: float) -> dict[str, int]:
        raise NotImplementedError

    def _one_each(self, ordered: list[JobView], cores: int, memory: float) -> dict[str, int]:
        """One core per job in ``ordered`` while cores last, skipping jobs whose memory does not fit."""
        grant = {}
        for job in ordered:
            if cores == 0:
                break
            if self.uses_memory and job.memory > memory:
                continue
            grant[job.job_id] = 1
            cores -= 1
            memory -= job.memory if self.uses_memory else 0
        return grant


class Rotary(Policy):
    name = "rotary"
    adaptive_epochs = True

    def allocate(self, jobs, cores, memory):
        grant = self._one_each(sorted(jobs, key=lambda j: j.arrival_s), cores, memory)
        spare = cores - len(grant)
        for job in sorted((j for j in jobs if j.job_id in grant), key=lambda j: -j.progress):
            if spare == 0:
                break
            grant[job.job_id] += 1
            spare -= 1
        return grant


class RoundRobin(Policy):
    name = "rr"

    def __init__(self):
        self._served: dict[str, int] = {}  # job -> epochs granted so far

    def allocate(self, jobs, cores, memory):
        ordered = sorted(jobs, key=lambda j: (self._served.get(j.job_id, 0), j.arrival_s))
        grant = self._one_each(ordered, cores, memory)
        for job_id in grant:
            self._served[job_id] = self._served.get(job_id, 0) + 1
        return grant


class EDF(Policy):
    name = "edf"

    def allocate(self, jobs, cores, memory):
        return self._one_each(sorted(jobs, key=lambda j: (j.deadline_s if j.deadline_s is not None else math.inf,
                                                           j.arrival_s)), cores, memory)


class LAF(Policy):
    name = "laf"

    def allocate(self, jobs, cores, memory):
        return self._one_each(sorted(jobs, key=lambda j: (j.estimate, j.arrival_s)), cores, memory)


class ReLAQS(Policy):
    name = "relaqs"
    uses_memory = False

    def allocate(self, jobs, cores, memory):
        # A job without two epochs yet has unknown potential: serve it first, as ReLAQS explores.
        ordered = sorted(jobs, key=lambda j: (-(math.inf if j.recent_gain is None else j.recent_gain), j.arrival_s))
        grant = self._one_each(ordered, cores, memory)
        spare = cores - len(grant)
        for job in ordered:
            if spare == 0:
                break
            if job.job_id in grant:
                grant[job.job_id] += 1
                spare -= 1
        return grant


POLICIES = {p.name: p for p in (Rotary, RoundRobin, EDF, LAF, ReLAQS)}


def make(name: str) -> Policy:
    try:
        return POLICIES[name]()
    except KeyError:
        raise ValueError(f"unknown arbitration policy {name!r}; choose from {', '.join(POLICIES)}") from None
