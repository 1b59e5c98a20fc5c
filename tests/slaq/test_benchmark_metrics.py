"""The SLAQ benchmark's metrics, worked by hand on small traces (no Spark)."""

import math

import pytest

from benchmarks.slaq import metrics
from benchmarks.slaq.workload import KINDS, generate

# Loss 10 -> 2 (reduction 8): 90% of it is reached at loss <= 2.8, 95% at <= 2.4.
TRACE = {"arrival_s": 1.0, "points": [[2.0, 10.0], [3.0, 6.0], [4.0, 2.8], [5.0, 2.4], [6.0, 2.0]]}


def test_time_to_reduction_counts_from_arrival():
    assert metrics.time_to_reduction(TRACE, 0.5) == 2.0  # loss 6 = 50%, reported at t = 3
    assert metrics.time_to_reduction(TRACE, 0.9) == 3.0
    assert metrics.time_to_reduction(TRACE, 0.95) == 4.0


def test_quality_is_one_until_the_first_report_and_undefined_outside_the_job():
    assert metrics.quality_at(TRACE, 0.5) is None
    assert metrics.quality_at(TRACE, 1.5) == 1.0
    assert metrics.quality_at(TRACE, 3.5) == pytest.approx(0.5)
    assert metrics.quality_at(TRACE, 6.0) == 0.0
    assert metrics.quality_at(TRACE, 6.5) is None


def test_average_normalized_loss_is_over_active_jobs_only():
    other = {"arrival_s": 3.0, "points": [[3.0, 4.0], [4.0, 1.0]]}
    assert metrics.average_normalized_loss([TRACE, other], [0.0, 3.5, 5.0]) == [None, pytest.approx(0.75), pytest.approx(0.05)]


def test_the_worst_job_is_the_one_whose_normalized_loss_averaged_over_its_life_is_largest():
    other = {"arrival_s": 3.0, "points": [[3.0, 4.0], [4.0, 1.0]]}  # 1 at 3.0 and 3.5, 0 at 4.0
    # TRACE over 1.0-6.0 in steps of 0.5: 1, 1, 1, 1, 0.5, 0.5, 0.1, 0.1, 0.05, 0.05, 0
    assert metrics.worst_job_normalized_loss([TRACE, other], [0.5 * k for k in range(14)]) == pytest.approx(2 / 3)
    assert metrics.worst_job_normalized_loss([TRACE], [0.5 * k for k in range(14)]) == pytest.approx(5.3 / 11)


def test_the_worst_job_by_loss_seconds_and_by_time_to_90_percent_counts_a_uniform_slowdown():
    other = {"arrival_s": 3.0, "points": [[3.0, 4.0], [4.0, 1.0]]}
    times = [0.5 * k for k in range(14)]
    assert metrics.worst_job_loss_seconds([TRACE, other], times, 0.5) == pytest.approx(0.5 * 5.3)
    assert metrics.worst_time_to_reduction([TRACE, other], 0.9) == 3.0  # TRACE's; other took 1.0
    slow = {"arrival_s": 1.0, "points": [[1 + 2 * (t - 1), loss] for t, loss in TRACE["points"]]}  # twice as slow
    times = [0.5 * k for k in range(24)]
    assert metrics.worst_job_normalized_loss([slow], times) == pytest.approx(
        metrics.worst_job_normalized_loss([TRACE], times), abs=0.03)  # the life average barely moves
    assert metrics.worst_job_loss_seconds([slow], times, 0.5) == pytest.approx(
        2 * metrics.worst_job_loss_seconds([TRACE], times, 0.5), rel=0.05)
    assert metrics.worst_time_to_reduction([slow], 0.9) == 6.0
    alone = metrics.loss_seconds(TRACE, times, 0.5)
    big = dict(slow, alone_loss_s=2 * alone)  # twice the work, served as well as it can be
    small = dict(TRACE, arrival_s=1.0, alone_loss_s=alone / 2)  # served half as well as alone
    assert metrics.worst_job_loss_seconds([big, small], times, 0.5) == metrics.loss_seconds(big, times, 0.5)
    assert metrics.worst_job_slowdown([big, small], times, 0.5) == pytest.approx(2.0)  # the small one
    assert metrics.worst_job_slowdown([TRACE], times, 0.5) is None  # no alone figure: no measure


def test_scaling_a_loss_changes_no_metric():
    scaled = {**TRACE, "points": [[t, 1000 * loss] for t, loss in TRACE["points"]]}
    a, b = metrics.summarize([scaled]), metrics.summarize([TRACE])
    assert a.pop("curve")["avg_normalized_loss"] == pytest.approx(b.pop("curve")["avg_normalized_loss"])
    assert a == pytest.approx(b)


def test_the_curve_fit_beats_the_strawman_ten_iterations_ahead_on_both_convergence_classes():
    for losses in ([1.0 / (0.3 * k + 1) + 0.2 for k in range(60)], [0.9 ** k + 0.1 for k in range(60)]):
        errors = metrics.prediction_errors(losses)
        assert errors[10]["fit"] < 0.05 < errors[10]["strawman"]
        assert errors[1]["strawman"] < errors[5]["strawman"] < errors[10]["strawman"], "the strawman degrades with h"


def test_the_workload_is_seeded_mixed_and_poisson():
    jobs = generate(40, mean_gap_s=2.0, seed=5)
    assert jobs == generate(40, mean_gap_s=2.0, seed=5)
    assert {j.kind for j in jobs} == set(KINDS)
    gaps = [b.arrival_s - a.arrival_s for a, b in zip(jobs, jobs[1:])]
    assert all(g >= 0 for g in gaps) and 1.0 < sum(gaps) / len(gaps) < 3.0
    assert math.isclose(jobs[0].arrival_s, 0.0)


@pytest.mark.parametrize("policy", ["fair", "slaq", "maxmin"])
def test_the_simulation_replays_every_iteration_of_every_job_in_order(policy):
    from benchmarks.slaq.simulate import simulate

    recorded = [{"kind": "a", "cpu_s": 4.0, "points": [[k, 1.0 / (k + 1)] for k in range(20)]},
                {"kind": "b", "cpu_s": 1.0, "points": [[k, 0.8 ** k] for k in range(10)]}]
    traces = simulate(recorded, policy=policy, cores=2, jobs=6, mean_gap_s=0.5, epoch_s=0.5,
                      overhead_s=0.01, work=1.0, seed=1)
    assert len(traces) == 6
    for trace in traces:
        times = [t for t, _ in trace["points"]]
        assert times == sorted(times) and times[0] > trace["arrival_s"]
        assert [loss for _, loss in trace["points"]] in ([1.0 / (k + 1) for k in range(20)], [0.8 ** k for k in range(10)])
        # alone on both cores it is served at least as well as beside five others
        assert 0 < trace["alone_loss_s"] <= metrics.loss_seconds(trace, [0.5 * k for k in range(400)], 0.5) + 0.5
    assert metrics.summarize(traces)["worst_job_slowdown"] >= 1.0 - 0.05


def test_mllib_comparison_gives_per_seed_ratios_and_a_t_interval():
    from benchmarks.slaq import mllib

    def run(t90, t95, loss):
        return {"summary": {"time_to_90_s": t90, "time_to_95_s": t95, "avg_normalized_loss": loss}}

    runs = {"2.0": {"0": {"fair": run(10, 20, 0.5), "slaq": run(5, 10, 0.25)},
                    "1": {"fair": run(10, 20, 0.5), "slaq": run(7, 14, 0.35)},
                    "2": {"fair": run(10, 20, 0.5), "slaq": run(6, None, 0.3)}}}
    comparison = mllib.compare(runs)["2.0"]
    assert comparison["time_to_90_s"]["per_seed"] == [0.5, 0.7, 0.6]
    assert comparison["time_to_95_s"]["per_seed"] == [0.5, 0.7]  # a seed without the value is left out
    ci = comparison["avg_normalized_loss"]
    assert ci["mean"] == pytest.approx(0.6) and ci["low"] == pytest.approx(0.6 - 4.303 * 0.1 / 3 ** 0.5, abs=1e-4)
    assert ci["high"] < 1  # all three seeds gained: the interval excludes 1
    assert mllib.interval([0.8])["low"] is None


def test_arms_are_two_of_the_schedulers_policies():
    import argparse

    from benchmarks.slaq.run import _two_policies

    assert _two_policies("fair, slaq") == ["fair", "slaq"] and _two_policies("fair,fair") == ["fair", "fair"]
    for bad in ("fair", "fair,slaq,maxmin", "fair,fifo"):
        with pytest.raises(argparse.ArgumentTypeError, match="expected two of fair, maxmin, slaq"):
            _two_policies(bad)


def test_an_aa_run_labels_its_second_arm_and_compares_it_with_the_first():
    from benchmarks.slaq import mllib

    assert mllib.arm_labels(["fair", "slaq"]) == ["fair", "slaq"]
    assert mllib.arm_labels(["fair", "fair"]) == ["fair", "fair-2"]
    summary = {"time_to_90_s": 10, "time_to_95_s": 20, "avg_normalized_loss": 0.5}
    runs = {"1.0": {"0": {"fair": {"summary": summary}, "fair-2": {"summary": {**summary, "time_to_90_s": 11}}}}}
    assert mllib.compare(runs, "fair", "fair-2")["1.0"]["time_to_90_s"]["per_seed"] == [1.1]


@pytest.mark.parametrize("mix", ["linear", "gradual"])
def test_each_mix_draws_every_kind_first_and_the_same_jobs_for_a_seed(mix):
    from benchmarks.slaq import mllib
    from benchmarks.slaq.workload import generate

    jobs = generate(9, 2.0, 4, mllib.MIXES[mix], mllib.PARAMS[mix])
    assert [j.kind for j in jobs[:4]] == list(mllib.MIXES[mix])
    assert jobs == generate(9, 2.0, 4, mllib.MIXES[mix], mllib.PARAMS[mix])
    assert len({j.arrival_s for j in jobs}) == 9 and jobs != generate(9, 2.0, 5, mllib.MIXES[mix], mllib.PARAMS[mix])
