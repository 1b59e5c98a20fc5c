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

:func:`parse` refuses a malformed text with a :class:`CriterionError` naming each wrong part
(``accuracy 2 is outside 0-1; WITHIN -5 SECONDS: a time must be positive``) and the accepted form.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..errors import SparkrmError

ATTAINED, UNATTAINED, RUNNING = "attained", "unattained", "running"


class CriterionError(SparkrmError, ValueError):
    """A completion criterion's text is malformed or out of range; the message names the part."""


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


#: The accepted form of each template, and an example, for the error messages.
_FORMS = {
    "accuracy": ("UNTIL ACC >= A [WITHIN N SECONDS|EPOCHS] with 0 < A <= 1", "UNTIL ACC >= 0.95 WITHIN 360 SECONDS"),
    "convergence": ("UNTIL CONVERGE(ACC, D) [WITHIN N SECONDS|EPOCHS] with 0 < D < 1",
                    "UNTIL CONVERGE(ACC, 0.001) WITHIN 30 EPOCHS"),
    "runtime": ("RUN FOR N SECONDS|EPOCHS", "RUN FOR 120 SECONDS"),
}
_ACC = re.compile(r"UNTIL\s+ACC\s*(>=|=>|<=|==|>|<|=)?\s*(.*)", re.I)
_CONVERGE = re.compile(r"UNTIL\s+CONVERGE\s*\((.*)\)", re.I)
_RUN_FOR = re.compile(r"RUN\s+FOR\b\s*(.*)", re.I)
_WITHIN = re.compile(r"(.*?)\s+WITHIN\b\s*(.*)", re.I)


def parse(text: str) -> Criterion:
    """A criterion from its text form (see the module docstring).

    Raises
    ------
    CriterionError
        Naming every malformed part (``accuracy 2 is outside 0-1``, ``WITHIN -5 SECONDS: a time must be
        positive``) and the accepted form, in one line.
    """
    shown = " ".join(str(text).split())
    head, within = shown, None
    m = _WITHIN.fullmatch(shown)
    if m:
        head, within = m.group(1), m.group(2)
    problems: list[str] = []
    if m := _ACC.fullmatch(head):
        kind = "accuracy"
        op, value = m.group(1), m.group(2)
        if op != ">=":
            problems.append(f"{' '.join(filter(None, ('ACC', op, value)))}: the accuracy is compared with >=")
        threshold = _number(value, "accuracy", problems)
        if threshold is not None and not 0 < threshold <= 1:
            problems.append(f"accuracy {value} is outside 0-1")
    elif m := _CONVERGE.fullmatch(head):
        kind = "convergence"
        args = [a.strip() for a in m.group(1).split(",")]
        if len(args) != 2 or args[0].upper() != "ACC":
            problems.append(f"CONVERGE({m.group(1)}): it takes ACC and a delta")
            delta = None
        else:
            delta = _number(args[1], "convergence delta", problems)
            if delta is not None and not 0 < delta < 1:
                problems.append(f"convergence delta {args[1]} is outside 0-1")
    elif m := _RUN_FOR.fullmatch(head):
        kind = "runtime"
        if within is not None:
            problems.append("RUN FOR takes no WITHIN: its budget follows FOR")
        budget = _budget_of("FOR", m.group(1), problems)
    else:
        forms = "; ".join(f"{form} (e.g. {example!r})" for form, example in _FORMS.values())
        raise CriterionError(f"{shown!r} is not a completion criterion. Write one of: {forms}.")
    if kind != "runtime":
        budget = {} if within is None else _budget_of("WITHIN", within, problems)
    if problems:
        form, example = _FORMS[kind]
        raise CriterionError(f"{shown!r}: {'; '.join(problems)}. Write {form}, e.g. {example!r}.")
    if kind == "accuracy":
        return accuracy(threshold, **budget)
    if kind == "convergence":
        return convergence(delta, **budget)
    return runtime(**budget)


def _number(text: str, what: str, problems: list) -> float | None:
    """``text`` as a finite number, or None with a problem noted."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value):
        problems.append(f"{what} {text!r} is not a number" if text else f"{what}: the number is missing")
        return None
    return value


def _budget_of(word: str, text: str, problems: list) -> dict:
    """The keyword arguments of a budget ``N SECONDS|EPOCHS`` following ``word``, or {} with a problem noted."""
    part = f"{word} {text}".strip()
    m = re.fullmatch(r"(\S+)\s+(\S+)", text)
    if not m or m.group(2).upper() not in ("SECONDS", "EPOCHS"):
        problems.append(f"{part}: a budget is a number then SECONDS or EPOCHS")
        return {}
    amount, unit = m.group(1), m.group(2).upper()
    value = _number(amount, "budget", problems)
    if value is None:
        return {}
    if unit == "SECONDS":
        if value <= 0:
            problems.append(f"{part}: a time must be positive")
            return {}
        return {"seconds": value}
    if value < 1 or value != int(value):
        problems.append(f"{part}: epochs are a whole number >= 1")
        return {}
    return {"epochs": int(value)}
