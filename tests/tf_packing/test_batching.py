"""Pad/slice planner: every member sees every example once per epoch in ceil(N/b) steps (spec 3.2),
in model.fit's consecutive batches by default or sharing rows as Repack does."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tf_packing.repack import batching
from tf_packing.repack.batching import BatchPlanner, steps_per_epoch


def plan_all(n, members, **kw):
    planner = BatchPlanner(n, record=True, **kw)
    for name, b, epochs in members:
        planner.add(name, b, epochs=epochs)
    plans = []
    while (plan := planner.next_step()) is not None:
        plans.append(plan)
    return planner, plans


def test_thesis_example_three_passes():
    planner, plans = plan_all(10_000, [("m1", 100, 1), ("m2", 50, 1), ("m3", 80, 1)], share_rows=True)
    steps = {n: sum(n in p.takes for p in plans) for n in ("m1", "m2", "m3")}
    assert steps == {"m1": 100, "m2": 200, "m3": 125}
    # Pass 1: 100 shared batches of 100; pass 2: 25 of 80; pass 3: 75 of 50 (spec 3.2).
    assert [len(p.indices) for p in plans] == [100] * 100 + [80] * 25 + [50] * 75
    assert all(t.offset == 0 for p in plans for t in p.takes.values())
    # After pass 1, model 2 has seen 5,000 examples and model 3 8,000; after pass 2 model 2 has 6,250.
    seen = lambda name, k: sum(len(r) for r in planner.history_[name][:k])
    assert (seen("m2", 100), seen("m3", 100), seen("m2", 125)) == (5_000, 8_000, 6_250)
    for name in ("m1", "m2", "m3"):
        assert np.array_equal(np.sort(np.concatenate(planner.history_[name])), np.arange(10_000))


def test_misaligned_step_counts_example():
    assert BatchPlanner(10_000).run_to_end() == {}
    planner = BatchPlanner(10_000)
    for name, b in [("a", 20), ("b", 50), ("c", 100)]:
        planner.add(name, b)
    assert planner.run_to_end() == {"a": 500, "b": 200, "c": 100}
    assert [steps_per_epoch(10_000, b) for b in (20, 50, 100)] == [500, 200, 100]


def test_partial_tail_is_padded_from_the_next_member_not_split():
    # N=11, b=(10, 3): a plain pass-by-pass slicer would give member b a 1-row step mid-epoch (5 steps).
    planner, plans = plan_all(11, [("a", 10, 1), ("b", 3, 1)], share_rows=True)
    assert [len(r) for r in planner.history_["b"]] == [3, 3, 3, 2]
    assert [len(r) for r in planner.history_["a"]] == [10, 1]
    assert [(p.takes["a"].count, p.takes["b"].offset) for p in plans[:2]] == [(10, 0), (1, 0)]
    assert len(plans[1].indices) == 3  # a's last row then two rows only b still needs


def test_hot_added_member_shares_rows_it_has_not_used():
    planner = BatchPlanner(8, record=True, share_rows=True)
    planner.add("a", 4, epochs=2)
    planner.next_step()
    planner.add("late", 2)
    second = planner.next_step()
    assert second.indices.tolist() == [4, 5, 6, 7]
    assert (second.takes["a"].offset, second.takes["late"].offset) == (0, 0)


def test_hot_added_member_opens_its_own_segment():
    planner = BatchPlanner(8, record=True, share_rows=True)
    planner.add("a", 4, epochs=2)
    first = planner.next_step()
    planner.add("late", 6)
    second = planner.next_step()
    assert first.indices.tolist() == [0, 1, 2, 3]
    assert second.indices.tolist() == [0, 1, 2, 3, 4, 5, 4, 5, 6, 7]
    assert (second.takes["late"].offset, second.takes["a"].offset) == (0, 6)
    assert second.epoch_ends == ("a",) and second.finished == ()


def test_by_default_each_member_takes_model_fits_consecutive_batches():
    planner, plans = plan_all(10, [("a", 4, 1), ("b", 3, 1)])
    assert [r.tolist() for r in planner.history_["a"]] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [r.tolist() for r in planner.history_["b"]] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    # where the runs coincide the rows are shared; elsewhere each member has its own segment
    assert [len(p.indices) for p in plans] == [4, 7, 5, 1]


def test_shuffle_order_is_shared_and_seeded():
    planner = BatchPlanner(50, shuffle=True, seed=7)
    again = BatchPlanner(50, shuffle=True, seed=7)
    assert np.array_equal(planner.order(3), again.order(3))
    assert not np.array_equal(planner.order(0), planner.order(1))
    assert sorted(planner.order(2).tolist()) == list(range(50))


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="n_examples must be an integer >= 1. Got 0"):
        BatchPlanner(0)
    planner = BatchPlanner(10)
    with pytest.raises(ValueError, match="batch_size of member 'a' must be an integer >= 1. Got 0"):
        planner.add("a", 0)
    planner.add("a", 2)
    with pytest.raises(ValueError, match="'a' is already in the plan"):
        planner.add("a", 2)
    with pytest.raises(KeyError, match="member 'zz' is not in the plan"):
        planner.remove("zz")


def test_doctests():
    assert doctest.testmod(batching).failed == 0


@settings(max_examples=60, deadline=None, derandomize=True)
@given(n=st.integers(1, 120), sizes=st.lists(st.integers(1, 40), min_size=1, max_size=5),
       epochs=st.lists(st.integers(1, 3), min_size=5, max_size=5), shuffle=st.booleans(),
       late=st.integers(0, 6), share_rows=st.booleans())
def test_every_member_sees_every_example_once_per_epoch(n, sizes, epochs, shuffle, late, share_rows):
    planner = BatchPlanner(n, shuffle=shuffle, seed=1, record=True, share_rows=share_rows)
    members = {f"m{i}": (b, epochs[i]) for i, b in enumerate(sizes)}
    names = list(members)
    planner.add(names[0], *members[names[0]][:1], epochs=members[names[0]][1])
    for _ in range(late):  # the others join while the first is under way (hot load)
        planner.next_step()
    for name in names[1:]:
        if name not in planner.history_:
            planner.add(name, members[name][0], epochs=members[name][1])
    sizes_of = {name: b for name, (b, _) in members.items()}
    while (plan := planner.next_step()) is not None:
        for name, take in plan.takes.items():
            assert take.count <= sizes_of[name] and take.offset + take.count <= len(plan.indices)
        assert len(plan.indices) <= sum(sizes_of[name] for name in plan.takes)
    for name, (b, ep) in members.items():
        batches = planner.history_[name]
        per_epoch = math.ceil(n / b)
        assert len(batches) == per_epoch * ep
        for e in range(ep):
            epoch = batches[e * per_epoch:(e + 1) * per_epoch]
            assert all(len(r) == b for r in epoch[:-1])
            assert np.array_equal(np.sort(np.concatenate(epoch)), np.arange(n))
            if not share_rows:  # model.fit's batches: consecutive runs of the epoch's order
                assert np.array_equal(np.concatenate(epoch), planner.order(e))
