"""Workloads of approximate jobs: thesis Table 3.1 and its skewed and scaled variants.

A definition (``conf/rotary/table-3.1.json`` holds the thesis's) lists per class the queries and
deadlines, the accuracy thresholds, the class mix, the job count and the mean inter-arrival time.
:func:`generate` draws a seeded workload from it: each job's class by the mix, then a uniform query,
threshold and deadline; arrivals are a Poisson process. ``time_scale`` multiplies every time
(deadlines and inter-arrivals) so that the thesis's SF 1 hour-long workload fits a small machine;
``mix`` overrides the class mix (``{"heavy": 1}`` is the all-heavy skewed workload).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from .spec import available


@dataclass(frozen=True)
class WorkloadJob:
    job_id: str
    query: int
    kind: str  # the class: light, medium, heavy
    threshold: float
    deadline_s: float  # relative to arrival
    arrival_s: float


def load_definition(path) -> dict:
    path = Path(path)
    try:
        definition = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot read the workload definition {path}: {e}") from None
    missing = {"jobs", "mean_interarrival_s", "mix", "classes", "thresholds"} - set(definition)
    if missing:
        raise ValueError(f"workload definition {path} lacks {sorted(missing)}")
    return definition


def generate(definition: dict, seed: int = 0, time_scale: float = 1.0, jobs: int | None = None,
             mix: dict | None = None) -> list[WorkloadJob]:
    """A seeded workload drawn from ``definition``, limited to queries with a progressive spec."""
    if time_scale <= 0:
        raise ValueError(f"time_scale must be > 0, not {time_scale!r}")
    supported = set(available())
    mix = mix or definition["mix"]
    classes = {}
    for kind, weight in mix.items():
        if kind not in definition["classes"]:
            raise ValueError(f"unknown job class {kind!r} in the mix; classes: {sorted(definition['classes'])}")
        queries = [q for q in definition["classes"][kind]["queries"] if q in supported]
        if weight > 0 and not queries:
            raise ValueError(f"class {kind!r} has no query with a progressive spec")
        if weight > 0:
            classes[kind] = (weight, queries, definition["classes"][kind]["deadlines_s"])
    rng = random.Random(seed)
    kinds = list(classes)
    arrival, workload = 0.0, []
    for i in range(jobs if jobs is not None else definition["jobs"]):
        kind = rng.choices(kinds, weights=[classes[k][0] for k in kinds])[0]
        _, queries, deadlines = classes[kind]
        workload.append(WorkloadJob(f"job{i:02d}", rng.choice(queries), kind,
                                    rng.choice(definition["thresholds"]), rng.choice(deadlines) * time_scale,
                                    round(arrival, 3)))
        arrival += rng.expovariate(1.0 / (definition["mean_interarrival_s"] * time_scale))
    return workload
