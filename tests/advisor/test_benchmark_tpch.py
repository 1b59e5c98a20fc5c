"""The advisor benchmark's rounds (the counts' order alternates, a count's run is its median over rounds) and
its runs at several partitionings."""

import math

import pytest

from benchmarks.advisor import median_run, round_order
from benchmarks.advisor.analysis import advice_columns, analyze, summarize
from spark_plugin.advisor import Run


def test_every_other_round_runs_the_counts_backwards():
    assert [round_order([1, 2, 3, 4], r) for r in range(3)] == [[1, 2, 3, 4], [4, 3, 2, 1], [1, 2, 3, 4]]


def test_a_counts_run_is_the_median_of_its_rounds_so_one_slow_round_does_not_move_it():
    rounds = [Run(2, 40, 10.0, stage_tasks=(20, 20)), Run(2, 44, 30.0, stage_tasks=(22, 22)),
              Run(2, 42, 11.0, stage_tasks=(21, 21))]
    run = median_run(2, rounds)
    assert (run.slots, run.tasks, run.wall_s, run.stage_tasks) == (2, 42, 11.0, (20, 20))


def test_runs_at_two_partitionings_are_checked_on_the_setting_the_advice_keeps_and_extrapolated_together():
    def run(m, n):
        wall = 2 + math.log(n / m) + 0.3 * m + 0.01 * n  # USBA's form: fastest at 20 tasks and 3 slots
        return Run(m, n, wall * (1.02 if (m, n) == (4, 80) else 1), source=f"spark.sql.shuffle.partitions={n}")

    [query] = analyze({"q": [run(m, n) for m in (1, 2, 3, 4) for n in (20, 80)]}).values()
    assert (query["recommended_measured_slots"], query["recommended_measured_setting"]) == (
        3, "spark.sql.shuffle.partitions=20") == (query["fastest_measured"], query["fastest_measured_setting"])
    # both runs at 4 slots predicted from the six at 1-3 (exactly: USBA's form), the one 2% off by 2/102
    assert query["extrapolation_error"]["usba"] == pytest.approx((0 + 0.02 / 1.02) / 2)
    assert summarize({"q": query})["recommended_is_fastest_measured"] == 1 and query["advice_cost"] == 0
    assert advice_columns(query)[2:] == ["3 (20 partitions)", "3 (20 partitions)"]
