"""The shared utility allocator: max-sum against brute force, max-min's minimum against brute force,
memory in the first round, and Rotary's policies unchanged now that they allocate through it."""

import itertools
import math
import random

import numpy as np
import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from spark_plugin.rotary import policies
from spark_plugin.rotary.policies import JobView
from spark_plugin.shared.utility import Claim, allocate, by_priority


def increasing(marginals, *, concave: bool):
    steps = sorted(marginals, reverse=True) if concave else marginals
    return np.concatenate([[0.0], np.cumsum(steps)])


def at(table, n):
    return table[min(n, len(table) - 1)]


def allocations(capacity, jobs):
    """Every split of ``capacity`` giving each of ``jobs`` at least one unit."""
    return [a for a in itertools.product(range(1, capacity + 1), repeat=jobs) if sum(a) == capacity]


marginals = st.lists(st.lists(st.floats(0.01, 10), min_size=1, max_size=6), min_size=1, max_size=4)


@seed(81)
@settings(max_examples=150, deadline=None)
@given(marginals, st.integers(4, 9))
def test_max_sum_reaches_the_best_total_on_concave_utilities(draw, capacity):
    tables = [increasing(m, concave=True) for m in draw]
    got = allocate([Claim(i, t) for i, t in enumerate(tables)], capacity)
    best = max(sum(at(t, n) for t, n in zip(tables, a)) for a in allocations(capacity, len(tables)))
    assert sum(at(t, got[i]) for i, t in enumerate(tables)) == pytest.approx(best, rel=1e-9, abs=1e-9)


@seed(82)
@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.floats(0.01, 10), min_size=9, max_size=9), min_size=1, max_size=4), st.integers(4, 9))
def test_max_min_reaches_the_best_minimum_on_increasing_utilities(draw, capacity):
    tables = [increasing(m, concave=False) for m in draw]  # any shape, rising at every unit
    got = allocate([Claim(i, t) for i, t in enumerate(tables)], capacity, objective="min")
    best = max(min(at(t, n) for t, n in zip(tables, a)) for a in allocations(capacity, len(tables)))
    assert min(at(t, got[i]) for i, t in enumerate(tables)) == pytest.approx(best, rel=1e-9, abs=1e-9)


def test_max_min_gives_the_rest_to_others_once_the_worst_job_cannot_gain():
    claims = [Claim("stuck", [0, 1, 1, 1]), Claim("rising", [0, 2, 3, 4, 5])]
    assert allocate(claims, 5, objective="min") == {"stuck": 1, "rising": 4}


def test_first_units_go_in_order_of_worth_skipping_jobs_whose_memory_no_longer_fits():
    claims = [Claim("a", [0, 3], 1, memory=6), Claim("big", [0, 2], 1, memory=10), Claim("c", [0, 1], 1, memory=4)]
    assert allocate(claims, 3, memory=10) == {"a": 1, "big": 0, "c": 1}
    assert allocate(claims, 1, memory=100) == {"a": 1, "big": 0, "c": 0}


def test_callable_utilities_are_read_lazily_and_bad_claims_are_refused_naming_the_job():
    asked = []

    def sqrt_utility(n):
        asked.append(int(n.max()))
        return np.sqrt(n)

    assert allocate([Claim("a", sqrt_utility), Claim("b", [0, 0.5, 0.6])], 1000) == {"a": 998, "b": 2}
    assert max(asked) <= 1000
    with pytest.raises(ValueError, match="job ids must be unique. Got 'a' twice"):
        allocate([Claim("a", [0, 1]), Claim("a", [0, 1])], 2)
    with pytest.raises(ValueError, match="the utility of job 'a' has non-finite values"):
        allocate([Claim("a", lambda n: np.full(n.shape, np.nan))], 2)
    with pytest.raises(ValueError, match="memory of job 'a' must be a number >= 0. Got -1"):
        allocate([Claim("a", [0, 1], memory=-1)], 2)
    with pytest.raises(ValueError, match="objective must be one of"):
        allocate([], 2, objective="max")


def old_rule(first, extra, cores, memory, uses_memory=True):
    """Rotary's policies before the shared allocator: one core each in ``first`` order while memory fits,
    then one extra each to the served jobs in ``extra`` order."""
    grant = {}
    for job in first:
        if cores == 0:
            break
        if uses_memory and job.memory > memory:
            continue
        grant[job.job_id], cores, memory = 1, cores - 1, memory - (job.memory if uses_memory else 0)
    for job in [j for j in extra or () if j.job_id in grant][:cores]:
        grant[job.job_id] += 1
    return grant


def random_jobs(rng: random.Random, n: int) -> list[JobView]:
    return [JobView(job_id=f"j{i}", arrival_s=rng.choice([0.0, 1.0, 2.0]) + i * 1e-3,
                    deadline_s=rng.choice([None, rng.uniform(5, 50)]), threshold=rng.choice([None, 0.8]),
                    memory=rng.uniform(1, 5), estimate=rng.random(), recent_gain=rng.choice([None, rng.random()]),
                    now_s=3.0, processing_s=rng.uniform(0, 3), needed_s=rng.choice([None, rng.uniform(1, 30)]),
                    next_estimate=rng.choice([None, rng.random()])) for i in range(n)]


def arrival(jobs):
    return sorted(jobs, key=lambda j: j.arrival_s)


def deadline(j):
    return j.deadline_s if j.deadline_s is not None else math.inf


OLD_ORDERS = {  # (first, extra) as each policy ordered its jobs before the shared allocator
    "rotary": lambda p, jobs: (arrival(jobs), sorted(jobs, key=lambda j: (-p.phi_hat(j), j.arrival_s))),
    "rotary-deadline": lambda p, jobs: 2 * (sorted(jobs, key=lambda j: (p.priority(j), j.arrival_s)),),
    "edf": lambda p, jobs: (sorted(jobs, key=lambda j: (deadline(j), j.arrival_s)), None),
    "laf": lambda p, jobs: (sorted(jobs, key=lambda j: (j.estimate, j.arrival_s)), None),
    "relaqs": lambda p, jobs: 2 * (sorted(jobs, key=lambda j: (
        -(math.inf if j.recent_gain is None else j.recent_gain), j.arrival_s)),),
}


@pytest.mark.parametrize("name", sorted(OLD_ORDERS))
def test_rotarys_policies_decide_as_before_through_the_shared_allocator(name):
    rng = random.Random(hash(name) % 1000)
    policy = policies.make(name)
    for _ in range(300):
        jobs = random_jobs(rng, rng.randint(0, 7))
        cores, memory = rng.randint(0, 12), rng.uniform(0, 25)
        first, extra = OLD_ORDERS[name](policy, jobs)
        assert policy.allocate(jobs, cores, memory) == old_rule(first, extra, cores, memory, policy.uses_memory)


def test_by_priority_keeps_every_first_unit_above_every_extra():
    tables = by_priority(list("abc"), list("cba"))
    assert min(t[1] for t in tables.values()) > max(t[2] - t[1] for t in tables.values())
