"""Predictions that say how sure they are: intervals from held-out errors, wider past the measured counts."""

import math

import pytest

from benchmarks.advisor.analysis import interval_coverage
from spark_plugin.advisor import Run, recommend
from spark_plugin.advisor.intervals import FLOOR, UNKNOWN, WIDEN, Interval, half_width, interval, next_count


def runs_of(time, counts=(1, 2, 3, 4)):
    return [Run(m, 16, time(m), stage_tasks=(8, 8)) for m in counts]


def test_the_half_width_is_the_largest_held_out_error_with_a_floor_and_widens_by_doublings_past_the_runs():
    assert half_width([0.01, -0.02, 0.03], 2, [1, 2, 4]) == FLOOR
    assert half_width([0.5, -0.1, 0.2], 3, [1, 2, 4]) == pytest.approx(0.5)
    assert half_width([0.5, -0.1, 0.2], 8, [1, 2, 4]) == pytest.approx(0.5 * (1 + WIDEN))
    assert half_width([], 2, [1, 2]) == UNKNOWN


def test_an_interval_is_symmetric_in_log_and_flags_extrapolation():
    iv = interval(10.0, [0.2, -0.1], 2, [1, 2, 4])
    assert iv.low_s * iv.high_s == pytest.approx(100.0) and iv.low_s < 10 < iv.high_s and not iv.extrapolated
    assert interval(10.0, [0.2, -0.1], 16, [1, 2, 4]).extrapolated
    assert interval(10.0, [0.2, -0.1], 16, [1, 2, 4]).relative_width > iv.relative_width


def test_the_next_count_is_the_advice_when_unmeasured_else_the_widest_rival_else_none():
    def iv(low, high):
        return Interval(math.sqrt(low * high), low, high, False)

    assert next_count({1: iv(9, 11), 2: iv(5, 7), 3: iv(4, 8)}, 3, [1, 2]) == 3
    assert next_count({1: iv(9, 11), 2: iv(5, 7), 3: iv(4, 9), 4: iv(4.5, 8)}, 2, [1, 2]) == 3
    assert next_count({1: iv(9, 11), 2: iv(5, 6), 3: iv(6.5, 9)}, 2, [1, 2]) is None


def test_the_advice_carries_an_interval_for_every_candidate_and_says_what_to_run_next():
    advice = recommend(runs_of(lambda m: 2 + 20 / m))
    assert set(advice.intervals) == set(range(1, 9))
    assert advice.interval.low_s < advice.predicted_s < advice.interval.high_s
    assert advice.slots == 8 and advice.interval.extrapolated and advice.next_slots == 8
    inside = recommend(runs_of(lambda m: 2 + 20 / m + 3 * m), max_slots=4)
    assert not inside.interval.extrapolated
    assert inside.intervals[2].relative_width < advice.intervals[8].relative_width


def test_the_command_prints_the_interval_the_extrapolation_and_the_next_run():
    from spark_plugin.advisor.__main__ import report

    runs = runs_of(lambda m: 2 + 20 / m)
    text = report(runs, recommend(runs), "q1")
    assert "(90% interval " in text and "extrapolated: 8 slots lies beyond the measured 1-4" in text
    assert "to narrow it, run next at 8 slots" in text


def test_coverage_holds_each_run_out_and_needs_four_runs():
    held = interval_coverage(runs_of(lambda m: 2 + 20 / m))
    assert [h["slots"] for h in held] == [1, 2, 3, 4] and all(h["covered"] for h in held)
    assert [h["extrapolated"] for h in held] == [True, False, False, True]
    assert interval_coverage(runs_of(lambda m: 2 + 20 / m, (1, 2, 3))) == []
