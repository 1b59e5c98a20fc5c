"""Normalization invariants of spark_plugin.slaq.quality (spec 3.2, 9.1.2): no Spark, milliseconds."""

import doctest

import numpy as np
import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from spark_plugin.slaq import LossHistory, normalized_deltas, normalized_loss, reduction_fraction
from spark_plugin.slaq import allocator, predictor, quality


def history(losses, iterations=None):
    h = LossHistory()
    for k, loss in zip(iterations or range(len(losses)), losses):
        h.record(k, loss)
    return h


def test_doctests_of_every_slaq_module_pass():
    for module in (quality, predictor, allocator):
        failures, _ = doctest.testmod(module)
        assert failures == 0, module.__name__


def test_hand_checked_normalized_deltas():
    # drops 4, 2, 1, -0.5 (a rise), 2: running max 4, 4, 4, 4, 4
    assert normalized_deltas([10, 6, 4, 3, 3.5, 1.5]).tolist() == [1.0, 0.5, 0.25, 0.0, 0.5]


def test_first_drop_is_one_and_a_later_larger_drop_resets_the_scale():
    assert normalized_deltas([5, 4, 1, 0.5]).tolist() == [1.0, 1.0, 1 / 6]


def test_no_decrease_yet_is_zero_and_short_histories_are_empty():
    assert normalized_deltas([3, 3, 4]).tolist() == [0.0, 0.0]
    assert normalized_deltas([3]).size == 0


def test_gaps_between_reported_iterations_count_per_iteration():
    h = history([10.0, 6.0, 2.0], iterations=[0, 1, 3])  # 4 in one iteration, then 4 over two
    assert h.deltas().tolist() == [4.0, 2.0]
    assert h.normalized_deltas().tolist() == [1.0, 0.5]
    assert h.max_delta_ == 4.0


losses_strategy = st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=2, max_size=40)


@seed(6)
@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-10_000, 10_000), min_size=2, max_size=40), st.floats(1e-3, 1e3),
       st.integers(-1000, 1000))
def test_scaling_and_shifting_a_loss_changes_no_normalized_value(losses, factor, shift):
    # Losses on a 0.1 grid: distinct values differ far above float rounding after the transform.
    base = np.array(losses) / 10
    moved = base * factor + shift
    np.testing.assert_allclose(normalized_deltas(moved), normalized_deltas(base), atol=1e-6)
    np.testing.assert_allclose(reduction_fraction(moved), reduction_fraction(base), atol=1e-6)
    floor = base.min() - 1.0
    np.testing.assert_allclose(normalized_loss(moved, floor * factor + shift), normalized_loss(base, floor), atol=1e-6)


def test_scaling_by_1000_on_a_real_shaped_trace():
    trace = [5 / (k + 3) + 0.7 for k in range(1, 40)]
    a, b = history(trace), history([1000 * x for x in trace])
    np.testing.assert_allclose(a.normalized_deltas(), b.normalized_deltas(), rtol=1e-12)
    np.testing.assert_allclose(a.reduction_fraction(), b.reduction_fraction(), rtol=1e-12)


@seed(7)
@settings(max_examples=200, deadline=None)
@given(losses_strategy)
def test_normalized_values_stay_in_unit_interval(losses):
    for values in (normalized_deltas(losses), reduction_fraction(losses), normalized_loss(losses, min(losses) - 1)):
        assert np.all((values >= 0) & (values <= 1))


@seed(8)
@settings(max_examples=100, deadline=None)
@given(st.floats(0.5, 0.99), st.floats(0.1, 10), st.integers(3, 60))
def test_convex_decreasing_traces_have_non_increasing_normalized_deltas_tending_to_zero(mu, amp, n):
    values = normalized_deltas([amp * mu ** k for k in range(n)])
    assert values[0] == 1.0
    assert np.all(np.diff(values) <= 1e-12)
    assert values[-1] == pytest.approx(mu ** (n - 2), rel=1e-6)


def test_normalized_loss_starts_at_one_and_ends_at_zero():
    values = normalized_loss([9.0, 5.0, 3.0, 1.0], floor=1.0)
    assert values.tolist() == [1.0, 0.5, 0.25, 0.0]
    assert normalized_loss([2.0, 3.0], floor=2.0).tolist() == [1.0, 1.0]  # no reduction: looks new


def test_reduction_fraction_and_the_time_to_90_and_95_percent():
    h = LossHistory()
    for k, (loss, t) in enumerate(zip([10.0, 5.0, 2.0, 1.5, 1.2, 1.0], [0, 1, 2, 3, 4, 5])):
        h.record(k, loss, time_s=float(t))
    np.testing.assert_allclose(h.reduction_fraction(), [0.0, 5 / 9, 8 / 9, 8.5 / 9, 8.8 / 9, 1.0])
    assert h.reaching(0.9) == (3.0, 3.0)
    assert h.reaching(0.95) == (4.0, 4.0)
    assert h.reaching(0.9, final_loss=0.0) == (5.0, 5.0)  # 9 of a predicted 10
    assert h.reaching(0.95, final_loss=0.0) is None
    assert history([3.0, 3.0]).reaching(0.5) is None


def test_record_rejects_bad_reports_with_the_argument_and_the_fix():
    h = history([1.0, 0.5])
    with pytest.raises(ValueError, match="iteration must increase.*Got 1 after 1"):
        h.record(1, 0.4)
    with pytest.raises(ValueError, match="loss must be a finite number. Got nan"):
        h.record(2, float("nan"))
    with pytest.raises(ValueError, match="cpu_time_s must be a finite number >= 0. Got -1"):
        h.record(2, 0.4, cpu_time_s=-1)
    with pytest.raises(ValueError, match=r"fraction must be in \(0, 1\]"):
        h.reaching(90)
    assert len(h) == 2


def test_columns_hold_the_telemetry_and_nan_where_absent():
    h = LossHistory().record(0, 2.0, cpu_time_s=4.0, data_size=2.0).record(1, 1.0)
    assert h.iterations_.tolist() == [0.0, 1.0]
    assert h.cpu_times_[0] == 4.0 and np.isnan(h.cpu_times_[1])
    assert h.data_sizes_[0] == 2.0 and np.isnan(h.times_[0])
