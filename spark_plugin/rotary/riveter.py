"""Riveter's cost model: at a pipeline breaker, suspend now or keep running (thesis ch. 4, Alg. 7 and 8).

A progressive query has a pipeline breaker after every step: its whole state is then the running
totals, one row per group (pipeline-level suspension persists just that, and a resumed query may use
any number of cores). The alternative is *redo*: keep running, and if the resources are taken away
before the query ends, run it again from the start. Process-level suspension (a CRIU image of the
JVMs, thesis Alg. 9) is not offered: an executor's image is tied to its cluster and core count.

The user (or a cloud's notice) gives a :class:`TerminationWindow`: the resources may be taken away
between ``start_s`` and ``end_s`` on the query's clock, with probability ``probability``. At each
breaker :func:`choose` compares

* redo: ``P_redo * T_e``, where ``P_redo`` is the chance that termination strikes before the next
  breaker (:func:`termination_probability` at ``now + mean step``);
* pipeline: ``L_s + L_r + P_ppl * now``, with the suspend and resume latencies from the state's size
  and the disk's speeds (infinite when the state does not fit the free memory), and ``P_ppl`` the
  chance that termination strikes before the suspension is written (at ``now + L_s``): the work done
  so far is then lost.

Pure Python, no Spark: :mod:`.suspension` applies it to a running query.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REDO = "redo"
PIPELINE = "pipeline"


@dataclass(frozen=True)
class TerminationWindow:
    """Resources may be taken away between ``start_s`` and ``end_s`` (query clock), with ``probability``."""

    start_s: float
    end_s: float
    probability: float

    def __post_init__(self):
        if not 0 <= self.start_s < self.end_s:
            raise ValueError(f"a termination window needs 0 <= start < end, not [{self.start_s}, {self.end_s}]")
        if not 0 <= self.probability <= 1:
            raise ValueError(f"a termination probability lies in [0, 1], not {self.probability!r}")


@dataclass(frozen=True)
class DiskSpeed:
    """Bytes per second written and read, plus a fixed cost per suspension and per resumption (opening
    files, planning the rest of the query)."""

    write_bps: float
    read_bps: float
    fixed_suspend_s: float = 0.0
    fixed_resume_s: float = 0.0

    def suspend_s(self, state_bytes: float) -> float:
        return self.fixed_suspend_s + state_bytes / self.write_bps

    def resume_s(self, state_bytes: float) -> float:
        return self.fixed_resume_s + state_bytes / self.read_bps

    @classmethod
    def measure(cls, folder, size: int = 8 << 20) -> "DiskSpeed":
        """Time writing (with fsync) and reading back ``size`` bytes in ``folder``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        block = os.urandom(size)
        with tempfile.NamedTemporaryFile(dir=folder) as f:
            start = time.perf_counter()
            f.write(block)
            f.flush()
            os.fsync(f.fileno())
            written = time.perf_counter() - start
            f.seek(0)
            start = time.perf_counter()
            f.read()
            read = time.perf_counter() - start
        return cls(size / max(written, 1e-6), size / max(read, 1e-6))


@dataclass(frozen=True)
class Decision:
    strategy: str  # REDO (keep running) or PIPELINE (suspend at this breaker)
    costs: dict  # strategy -> expected seconds lost


def termination_probability(now_s: float, until_s: float, window: TerminationWindow) -> float:
    """The chance that termination strikes before ``until_s``, seen at ``now_s`` (the overlap rule of
    Alg. 7 and 8): all of it once the window has begun or ``until_s`` reaches its end, the overlapping
    share of it when ``until_s`` falls inside the window, none before."""
    if now_s >= window.start_s or until_s >= window.end_s:
        return window.probability
    if until_s >= window.start_s:
        return (until_s - window.start_s) / (window.end_s - window.start_s) * window.probability
    return 0.0


def redo_cost(now_s: float, mean_step_s: float, window: TerminationWindow) -> float:
    """Alg. 7: expected loss of running on, ``P_redo * T_e``."""
    return termination_probability(now_s, now_s + mean_step_s, window) * window.end_s


def pipeline_cost(now_s: float, state_bytes: float, free_memory: float, disk: DiskSpeed,
                  window: TerminationWindow) -> float:
    """Alg. 8: expected cost of suspending now, ``L_s + L_r + P_ppl * now`` (infinite when the state
    does not fit the free memory)."""
    if state_bytes > free_memory:
        return math.inf
    suspend_s = disk.suspend_s(state_bytes)
    return suspend_s + disk.resume_s(state_bytes) + termination_probability(now_s, now_s + suspend_s, window) * now_s


def choose(now_s: float, mean_step_s: float, state_bytes: float, window: TerminationWindow, disk: DiskSpeed,
           free_memory: float = math.inf) -> Decision:
    """The cheaper strategy at this breaker; a tie keeps running (suspending costs a resume)."""
    costs = {REDO: redo_cost(now_s, mean_step_s, window),
             PIPELINE: pipeline_cost(now_s, state_bytes, free_memory, disk, window)}
    return Decision(PIPELINE if costs[PIPELINE] < costs[REDO] else REDO, costs)
