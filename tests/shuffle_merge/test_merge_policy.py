"""The merge policies and the request model, in pure Python (thesis numbers as fixtures)."""

import math

import pytest
from hypothesis import given, settings, strategies as st

from shuffle_merge.cost_model import RequestModel, reads_per_reducer as model_reads
from shuffle_merge.merge_policy import MapOutput, MergePolicy, plan_merges, reads_per_reducer

MB = 1 << 20


def outputs(executors, count, size=MB, partitions=10):
    """``count`` map outputs dealt round-robin to ``executors``."""
    return [MapOutput(i, 1000 + i, executors[i % len(executors)], size, partitions) for i in range(count)]


def test_fanin_groups_every_n_outputs_of_an_executor_in_arrival_order():
    groups = plan_merges(outputs(["a"], 7), MergePolicy("fanin", fan_in=3), merge_leftovers=False)
    assert [[o.map_index for o in g] for g in groups] == [[0, 1, 2], [3, 4, 5]]


def test_fanin_merges_the_leftover_at_stage_end():
    groups = plan_merges(outputs(["a", "b"], 10), MergePolicy("fanin", fan_in=3))
    assert [[o.map_index for o in g] for g in groups] == [[0, 2, 4], [1, 3, 5], [6, 8], [7, 9]]


def test_a_single_leftover_is_not_merged():
    groups = plan_merges(outputs(["a"], 7), MergePolicy("fanin", fan_in=3))
    assert [len(g) for g in groups] == [3, 3]


def test_leftovers_are_skipped_once_the_best_effort_fraction_is_reached():
    groups = plan_merges(outputs(["a"], 10), MergePolicy("fanin", fan_in=4), best_effort=0.8)
    assert [len(g) for g in groups] == [4, 4]  # 8/10 issued: the last two stay unmerged


def test_blocksize_merges_when_average_blocks_add_up_to_the_target():
    policy = MergePolicy("blocksize", target_block_bytes=MB)
    small = outputs(["a"], 7, size=4 * MB, partitions=10)  # 0.4 MB average blocks: 3 per merge
    groups = plan_merges(small, policy, merge_leftovers=False)
    assert [[o.map_index for o in g] for g in groups] == [[0, 1, 2], [3, 4, 5]]


def test_blocksize_never_merges_outputs_whose_blocks_are_already_large():
    policy = MergePolicy("blocksize", target_block_bytes=MB)
    big = outputs(["a"], 5, size=20 * MB, partitions=10)  # 2 MB blocks
    assert plan_merges(big, policy) == []


def test_blocksize_caps_the_fan_in():
    policy = MergePolicy("blocksize", target_block_bytes=MB, max_fan_in=4)
    tiny = outputs(["a"], 9, size=1000, partitions=10)
    assert [len(g) for g in plan_merges(tiny, policy, merge_leftovers=False)] == [4, 4]


def test_zero_byte_outputs_are_never_merged():
    outs = outputs(["a"], 4) + [MapOutput(9, 9, "a", 0, 10)]
    assert all(o.map_index != 9 for g in plan_merges(outs, MergePolicy("fanin", fan_in=2)) for o in g)


def test_invalid_policies_are_refused():
    with pytest.raises(ValueError, match="kind must be one of"):
        MergePolicy("lifo")
    with pytest.raises(ValueError, match="fan_in and max_fan_in must be >= 2"):
        MergePolicy("fanin", fan_in=1)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 8 * MB)), max_size=60),
       st.sampled_from(["fanin", "blocksize"]), st.integers(2, 9), st.floats(0.05, 1.0))
def test_every_output_is_merged_at_most_once_with_outputs_of_its_own_executor(spec, kind, n, best_effort):
    outs = [MapOutput(i, i, ex, size, 8) for i, (ex, size) in enumerate(spec)]
    groups = plan_merges(outs, MergePolicy(kind, fan_in=n, target_block_bytes=MB, max_fan_in=n + 3),
                         best_effort=best_effort)
    merged = [o.map_index for g in groups for o in g]
    assert len(merged) == len(set(merged))
    assert all(len({o.executor for o in g}) == 1 and len(g) >= 2 for g in groups)
    assert reads_per_reducer(outs, groups) == len(groups) + len(outs) - len(merged)


def test_complete_fanin_merging_matches_the_closed_form():
    outs = outputs(["a", "b"], 23)  # 12 on a, 11 on b
    groups = plan_merges(outs, MergePolicy("fanin", fan_in=5))
    assert reads_per_reducer(outs, groups) == model_reads([12, 11], 5) == 3 + 3


def test_thesis_worked_example_22x_fewer_requests():
    model = RequestModel(maps=1000, reducers=1000, shuffle_bytes=100e9)
    assert model.vanilla_reads() == 1_000_000
    assert model.merged_reads(40) == 25_000
    assert model.merge_io_requests(10e6) == 20_000
    assert model.total_requests(40, 10e6) == 45_000


def test_thesis_best_effort_example_590_reads_per_reducer():
    model = RequestModel(maps=8000, reducers=2500)
    assert math.isclose(model.best_effort_reads_per_reducer(40, 0.95), 590)
