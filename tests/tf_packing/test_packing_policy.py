"""pack_opt: index distance, kNN/random/batch-size packing, partition validity, memory admission."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given, settings, strategies as st

from tf_packing.repack import memory
from tf_packing.tuner import early_kill, packing_policy
from tf_packing.tuner.early_kill import KillRule
from tf_packing.repack.memory import estimate_bytes, pack_bytes
from tf_packing.tuner.packing_policy import (batch_size_pack, check_partition, index_distance, knn_pack, pack_opt,
                                       random_pack, split_group)

from tf_packing.tuner.hyperband import TABLE_2_3


def cfg(bs, opt, lr, act):
    return {"batch_size": bs, "optimizer": opt, "learning_rate": lr, "activation": act}


def test_thesis_distance_example_is_5():
    a, b = cfg(20, "sgd", 0.01, "relu"), cfg(40, "adagrad", 0.01, "relu")
    assert index_distance(a, b, TABLE_2_3) == 5
    assert index_distance(a, a, TABLE_2_3) == 0
    assert index_distance(cfg(70, "adam", 0.1, "tanh"), cfg(20, "sgd", 0.000001, "relu"), TABLE_2_3) == 10 + 1 + 5 + 1


def test_knn_groups_nearest_within_capacity_and_threshold():
    configs = [cfg(20, "adam", 0.01, "relu"), cfg(25, "adam", 0.01, "relu"), cfg(70, "sgd", 0.1, "tanh"),
               cfg(20, "adam", 0.001, "relu"), cfg(65, "sgd", 0.1, "tanh")]
    groups = knn_pack(configs, TABLE_2_3, [1.0] * 5, capacity=3.0, threshold=2, seed=0)
    assert sorted(sorted(g) for g in groups) == [[0, 1, 3], [2, 4]]
    # capacity 2 admits pairs only; threshold 0 admits identical configurations only (singletons here)
    assert max(len(g) for g in knn_pack(configs, TABLE_2_3, [1.0] * 5, capacity=2.0, seed=0)) == 2
    assert knn_pack(configs, TABLE_2_3, [1.0] * 5, threshold=0, seed=0) == [[i] for i in
                                                                           _centroid_order(5, seed=0)]


def _centroid_order(n, seed):
    import random

    rng, left, out = random.Random(seed), list(range(n)), []
    while left:
        out.append(left.pop(rng.randrange(len(left))))
    return out


def test_random_and_batch_size_packing():
    configs = [cfg(b, "adam", 0.01, "relu") for b in (20, 20, 30, 20, 30, 40)]
    mem = [1.0] * 6
    groups = random_pack(configs, mem, group_size=4, seed=3)
    assert [len(g) for g in groups] == [4, 2]
    assert sorted(map(sorted, random_pack(configs, mem, group_size=4, capacity=2.0, seed=3))) == sorted(
        map(sorted, [g[i:i + 2] for g in groups for i in range(0, len(g), 2)]))
    assert batch_size_pack(configs, mem) == [[0, 1, 3], [2, 4], [5]]
    assert batch_size_pack(configs, mem, capacity=2.0) == [[0, 1], [3], [2, 4], [5]]
    assert pack_opt(configs, TABLE_2_3, mem, strategy="none") == [[i] for i in range(6)]


def test_oversized_configuration_runs_alone_and_split_halves():
    configs = [cfg(20, "adam", 0.01, "relu")] * 3
    groups = pack_opt(configs, TABLE_2_3, [5.0, 1.0, 1.0], strategy="knn", capacity=2.0, seed=0)
    assert sorted(map(sorted, groups)) == [[0], [1, 2]]
    assert split_group([4, 5, 6]) == [[4, 5], [6]]
    with pytest.raises(ValueError, match="a single configuration ran out of memory"):
        split_group([4])


def test_check_partition_rejects_bad_groups():
    with pytest.raises(ValueError, match="not a partition of range\\(3\\)"):
        check_partition([[0, 1], [1, 2]], 3)
    with pytest.raises(ValueError, match="group \\[0, 1\\] needs 5 bytes, over the capacity of 4"):
        check_partition([[0, 1], [2]], 3, [2.0, 3.0, 9.0], 4.0)
    with pytest.raises(ValueError, match="strategy must be one of"):
        pack_opt([], TABLE_2_3, [], strategy="greedy")


@settings(max_examples=80, deadline=None, derandomize=True)
@given(picks=st.lists(st.tuples(st.integers(0, 10), st.integers(0, 3), st.integers(0, 5), st.integers(0, 3),
                                st.floats(0.1, 5.0)), min_size=1, max_size=30),
       strategy=st.sampled_from(["knn", "random", "batch_size", "none"]), capacity=st.floats(1.0, 12.0),
       threshold=st.one_of(st.none(), st.integers(0, 8)), seed=st.integers(0, 5))
def test_every_strategy_returns_a_feasible_partition(picks, strategy, capacity, threshold, seed):
    names = list(TABLE_2_3)
    configs = [{n: TABLE_2_3[n][i] for n, i in zip(names, p[:4])} for p in picks]
    mem = [p[4] for p in picks]
    groups = pack_opt(configs, TABLE_2_3, mem, strategy=strategy, capacity=capacity, threshold=threshold,
                      group_size=3, seed=seed)
    assert sorted(i for g in groups for i in g) == list(range(len(configs)))
    for g in groups:
        assert len(g) == 1 or sum(mem[i] for i in g) <= capacity
        if strategy == "batch_size":
            assert len({configs[i]["batch_size"] for i in g}) == 1
        if strategy == "knn" and threshold is not None:
            assert all(index_distance(configs[g[0]], configs[i], TABLE_2_3) <= threshold for i in g)


def test_memory_estimate_and_admission():
    per = estimate_bytes(10_000, 500, 64, slots=2)
    assert per == 4 * (10_000 * 4 + 2 * 500 * 64)
    assert estimate_bytes(10_000, 500, 128, slots=2) - per == 4 * 2 * 500 * 64  # linear in batch size
    assert pack_bytes([per, per, 1]) == 2 * per + 1
    with pytest.raises(ValueError, match="batch_size >= 1"):
        estimate_bytes(1, 1, 0)


def test_kill_rule():
    rule = KillRule(threshold=0.2, boundary=2)
    assert [rule.should_kill(c) for c in ([0.1], [0.1, 0.15], [0.1, 0.25], [0.3, 0.1])] == [False, True, False,
                                                                                         False]
    assert KillRule(threshold=1.0, boundary=1, mode="min").should_kill([1.5]) is True
    with pytest.raises(ValueError, match="boundary must be >= 1 epoch"):
        KillRule(0.1, boundary=0)


def test_doctests():
    for module in (packing_policy, memory, early_kill):
        assert doctest.testmod(module).failed == 0
