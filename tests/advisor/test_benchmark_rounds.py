"""The advisor benchmark's rounds: the counts' order alternates, and a count's run is its median over rounds."""

from benchmarks.advisor import median_run, round_order
from spark_plugin.advisor import Run


def test_every_other_round_runs_the_counts_backwards():
    assert [round_order([1, 2, 3, 4], r) for r in range(3)] == [[1, 2, 3, 4], [4, 3, 2, 1], [1, 2, 3, 4]]


def test_a_counts_run_is_the_median_of_its_rounds_so_one_slow_round_does_not_move_it():
    rounds = [Run(2, 40, 10.0, stage_tasks=(20, 20)), Run(2, 44, 30.0, stage_tasks=(22, 22)),
              Run(2, 42, 11.0, stage_tasks=(21, 21))]
    run = median_run(2, rounds)
    assert (run.slots, run.tasks, run.wall_s, run.stage_tasks) == (2, 42, 11.0, (20, 20))
