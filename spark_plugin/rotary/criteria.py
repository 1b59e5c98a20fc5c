"""User-defined completion criteria (thesis ch. 3.2.2): when a progressive job is done.

Three templates, each with an optional budget written with ``WITHIN``::

    UNTIL ACC >= 0.95 WITHIN 360 SECONDS       accuracy: the estimate reaches a threshold
    UNTIL CONVERGE(ACC, 0.001) WITHIN 30 EPOCHS convergence: the estimate moves less than delta
    RUN FOR 120 SECONDS                        runtime: just a budget

A job is *attained* when its criterion is met within its budget, *unattained* when its budget runs
out first (elapsed time counts from arrival, so waiting counts too), and *running* otherwise. A job
whose every batch is processed holds the exact answer and is attained whatever its threshold, if it
got there within its budget. A criterion met only after the deadline is not attained: an answer
after the deadline is late, however good.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ATTAINED, UNATTAINED, RUNNING = "attained", "unattained", "running"


@dataclass(frozen=True)
class Progress:
    """What a criterion looks at after an epoch."""

    elapsed_s: float  # since arrival
    epochs: int  # epochs run
    estimate: float  # the envelope estimate of accuracy now
    previous: float | None = None  # the estimate one epoch before
    complete: bool = False  # every batch processed


@dataclass(frozen=True)
class Budget:
    seconds: float | None = None
    epochs: int | None = None

    def spent(self, p: Progress) -> bool:
        return ((self.seconds is not None and p.elapsed_s >= self.seconds)
                or (self.epochs is not None and p.epochs >= self.epochs))

    def overrun(self, p: Progress) -> bool:
        """Past the budget: what is met now was met too late (meeting it on the last epoch or second counts)."""
        return ((self.seconds is not None and p.elapsed_s > self.seconds)
                or (self.epochs is not None and p.epochs > self.epochs))

    def __str__(self):
        return f"{self.seconds:g} SECONDS" if self.seconds is not None else f"{self.epochs} EPOCHS"


@dataclass(frozen=True)
class Criterion:
    kind: str  # "accuracy", "convergence" or "runtime"
    budget: Budget | None = None
    threshold: float | None = None  # accuracy
    delta: float | None = None  # convergence

    def status(self, p: Progress) -> str:
        if self.budget is not None and self.budget.overrun(p):
            return ATTAINED if self.kind == "runtime" else UNATTAINED
        if p.complete:
            return ATTAINED
        if self.kind == "accuracy" and p.estimate >= self.threshold:
            return ATTAINED
        if (self.kind == "convergence" and p.previous is not None and p.estimate > 0
                and abs(p.estimate - p.previous) < self.delta):
            return ATTAINED
        if self.budget is not None and self.budget.spent(p):
            return ATTAINED if self.kind == "runtime" else UNATTAINED
        return RUNNING

    @property
    def deadline_s(self) -> float | None:
        return self.budget.seconds if self.budget else None

    def __str__(self):
        within = f" WITHIN {self.budget}" if self.budget else ""
        if self.kind == "accuracy":
            return f"UNTIL ACC >= {self.threshold:g}{within}"
        if self.kind == "convergence":
            return f"UNTIL CONVERGE(ACC, {self.delta:g}){within}"
        return f"RUN FOR {self.budget}"


def accuracy(threshold: float, seconds: float | None = None, epochs: int | None = None) -> Criterion:
    if not 0 < threshold <= 1:
        raise ValueError(f"an accuracy threshold lies in (0, 1], not {threshold!r}")
    return Criterion("accuracy", _budget(seconds, epochs, required=False), threshold=threshold)


def convergence(delta: float, seconds: float | None = None, epochs: int | None = None) -> Criterion:
    if not 0 < delta < 1:
        raise ValueError(f"a convergence delta lies in (0, 1), not {delta!r}")
    return Criterion("convergence", _budget(seconds, epochs, required=False), delta=delta)


def runtime(seconds: float | None = None, epochs: int | None = None) -> Criterion:
    return Criterion("runtime", _budget(seconds, epochs, required=True))


def _budget(seconds, epochs, required: bool) -> Budget | None:
    if seconds is not None and epochs is not None:
        raise ValueError("give a budget in seconds or in epochs, not both")
    if seconds is None and epochs is None:
        if required:
            raise ValueError("a runtime criterion needs a budget in seconds or epochs")
        return None
    if (seconds is not None and seconds <= 0) or (epochs is not None and (not isinstance(epochs, int) or epochs < 1)):
        raise ValueError(f"a budget is positive seconds or a whole number of epochs >= 1, not {seconds or epochs!r}")
    return Budget(seconds=seconds, epochs=epochs)


_NUMBER = r"(\d+(?:\.\d+)?)"
_WITHIN = rf"(?:\s+WITHIN\s+{_NUMBER}\s+(SECONDS|EPOCHS))?"
_FORMS = [
    (re.compile(rf"^UNTIL\s+ACC\s*>=\s*{_NUMBER}{_WITHIN}$", re.I), accuracy),
    (re.compile(rf"^UNTIL\s+CONVERGE\(\s*ACC\s*,\s*{_NUMBER}\s*\){_WITHIN}$", re.I), convergence),
]
_RUN_FOR = re.compile(rf"^RUN\s+FOR\s+{_NUMBER}\s+(SECONDS|EPOCHS)$", re.I)


def parse(text: str) -> Criterion:
    """A criterion from its text form (see the module docstring)."""
    text = " ".join(text.split())
    for pattern, make in _FORMS:
        m = pattern.match(text)
        if m:
            value, amount, unit = m.groups()
            return make(float(value), **_budget_args(amount, unit))
    m = _RUN_FOR.match(text)
    if m:
        return runtime(**_budget_args(*m.groups()))
    raise ValueError(f"not a completion criterion: {text!r}; write e.g. 'UNTIL ACC >= 0.95 WITHIN 360 SECONDS', "
                     "'UNTIL CONVERGE(ACC, 0.001) WITHIN 30 EPOCHS' or 'RUN FOR 120 SECONDS'")


def _budget_args(amount, unit) -> dict:
    if amount is None:
        return {}
    return {"seconds": float(amount)} if unit.upper() == "SECONDS" else {"epochs": int(float(amount))}
