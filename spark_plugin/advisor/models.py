"""Fit and predict: USBA's run-time regression and IPSO's speedup shape, from a job's runs.

**USBA** (thesis eq. 3.14-3.16, below the launch-overhead plateau θ, which the thesis finds at 19-20
executors): T(N, m) = τ₀q(m) + Στ·p(N, m) with p = (1-β-γ) + α ln(N/m) + βm + γN and q = 1-ε+εm is linear
in (1, ln(N/m), m, N), so least squares fits it, with the first-wave term b = Στα and the scale-out term
c = Στβ + τ₀ε kept non-negative as the thesis's are (a noisy run must not turn overhead into a speedup that
grows past the runs); with N fixed the N column drops out, leaving T = a + b·ln(N/m) + c·m, whose minimum over
m is at m* = b/c (the spec's α/β).

**IPSO** (fixed-size, eq. 2.10 with EX = IN = 1 and q(n) = βn): T(n) = s + p/n + o·n splits a run into a
serial part s, a parallel part p and a scale-out overhead o per slot, fitted without negative parts; its
scaling type follows: I (linear: no serial part, no overhead), III (bounded like Amdahl: a serial part, no
overhead) or IV (peaks at n* = sqrt(p/o), then falls: the overhead grows with n).

**Waves** (ours): T(m) = s + τ·W(m) + o·m with W(m) = Σ_stages ceil(n_i / m), the task waves of the job's stages
on m slots, every part non-negative. USBA's ln(N/m) is the smooth form of W for many tasks per slot; with few
(a stage of 4 tasks runs 2 waves on 2 or 3 slots and 1 on 4 or more), the steps are what a job sees: 3 slots
gain nothing over 2, and slots past the widest stage gain nothing at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import lsq_linear, nnls

from .runs import Run


@dataclass(frozen=True)
class Usba:
    """T(N, m) = Σ coef · feature, with features among ``1, ln(N/m), m, N`` (``names``)."""

    names: tuple[str, ...]
    coef: tuple[float, ...]

    @classmethod
    def fit(cls, runs: list[Run]) -> "Usba":
        """Bounded least squares on as many features as the runs determine (a constant N drops the N column)."""
        if len(runs) < 2:
            raise ValueError(f"USBA needs runs at two or more slot counts, got {len(runs)}")
        names = ["1", "ln(N/m)", "m"]
        if len({r.tasks for r in runs}) > 1:
            names.append("N")
        names = names[:len({(r.slots, r.tasks) for r in runs})]
        X = np.array([_features(r.slots, r.tasks, names) for r in runs])
        y = np.array([r.wall_s for r in runs])
        low = [0.0 if n in ("ln(N/m)", "m") else -np.inf for n in names]
        coef = lsq_linear(X, y, bounds=(low, np.inf)).x
        return cls(tuple(names), tuple(float(c) for c in coef))

    def predict(self, slots: int, tasks: int) -> float:
        return float(np.dot(_features(slots, tasks, self.names), self.coef))

    def best_slots(self) -> float | None:
        """m* = b/c where the run time stops falling (``None`` when it never does: no overhead term fitted)."""
        terms = dict(zip(self.names, self.coef))
        b, c = terms.get("ln(N/m)", 0.0), terms.get("m", 0.0)
        return b / c if b > 0 and c > 0 else None


@dataclass(frozen=True)
class Ipso:
    """T(n) = serial + parallel/n + overhead·n, each part at least zero."""

    serial: float
    parallel: float
    overhead: float

    @classmethod
    def fit(cls, runs: list[Run]) -> "Ipso":
        if len(runs) < 2:
            raise ValueError(f"IPSO needs runs at two or more slot counts, got {len(runs)}")
        X = np.array([[1.0, 1.0 / r.slots, float(r.slots)] for r in runs])
        parts, _ = nnls(X, np.array([r.wall_s for r in runs]))
        return cls(*(float(p) for p in parts))

    def predict(self, slots: int) -> float:
        return self.serial + self.parallel / slots + self.overhead * slots

    def speedup(self, slots: int) -> float:
        """Over one slot."""
        return self.predict(1) / self.predict(slots)

    @property
    def eta(self) -> float:
        """η: the parallel share of a one-slot run."""
        total = self.serial + self.parallel
        return self.parallel / total if total > 0 else 0.0

    def peak_slots(self) -> float | None:
        """n* = sqrt(parallel / overhead), where the speedup peaks (``None`` without overhead)."""
        return math.sqrt(self.parallel / self.overhead) if self.overhead > 0 and self.parallel > 0 else None

    def scaling_type(self, tolerance: float = 0.02) -> tuple[str, str]:
        """IPSO's fixed-size type and why, parts below ``tolerance`` of a one-slot run counting as none."""
        one = self.predict(1)
        serial, overhead = self.serial / one > tolerance, self.overhead / one > tolerance
        if overhead:
            peak = self.peak_slots()
            where = (f"peaks near {peak:.1f} slots and then falls" if peak and peak >= 1
                     else "falls from the first slot added")
            return "IV", (f"the speedup {where}: a scale-out overhead of {self.overhead:.2f} s per slot grows "
                          "with the slots (scheduling, broadcast, shuffle fan-in)")
        if serial:
            return "III", (f"the speedup is bounded by {1 / (1 - self.eta):.1f}x: {100 * (1 - self.eta):.0f}% of a "
                           "one-slot run is serial (driver work, single-task stages)")
        return "I", "the run time falls in proportion to the slots: no serial part or overhead to speak of"


def _features(slots: int, tasks: int, names) -> list[float]:
    value = {"1": 1.0, "ln(N/m)": math.log(max(tasks, 1) / slots), "m": float(slots), "N": float(tasks)}
    return [value[n] for n in names]


@dataclass(frozen=True)
class Waves:
    """T(m) = serial + per_wave · W(m) + overhead · m, W(m) the task waves of the job's stages on m slots."""

    serial: float
    per_wave: float
    overhead: float

    @classmethod
    def fit(cls, runs: list[Run]) -> "Waves":
        if len(runs) < 2 or any(not r.stage_tasks for r in runs):
            raise ValueError("the waves model needs runs at two or more slot counts, each with its stages' task counts")
        X = np.array([[1.0, waves(r.stage_tasks, r.slots), float(r.slots)] for r in runs])
        parts, _ = nnls(X, np.array([r.wall_s for r in runs]))
        return cls(*(float(p) for p in parts))

    def predict(self, slots: int, stage_tasks) -> float:
        return self.serial + self.per_wave * waves(stage_tasks, slots) + self.overhead * slots


def waves(stage_tasks, slots: int) -> int:
    """Σ ceil(n_i / slots): the rounds of tasks the stages run on ``slots`` slots."""
    return sum(-(-n // slots) for n in stage_tasks)
