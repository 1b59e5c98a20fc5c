"""The benchmark's pure pieces: the seeded burst schedule and the per-arm summary ratios."""

import pytest

from benchmarks.wrangler.noise import burst_schedule
from benchmarks.wrangler.run import summarize


def test_bursts_are_seeded_ordered_disjoint_and_inside_the_window():
    a = burst_schedule(7, 300)
    assert a == burst_schedule(7, 300) and a != burst_schedule(8, 300)
    assert all(3 <= end - start <= 8 or end == 300 for start, end in a)
    assert all(prev_end < start for (_, prev_end), (start, _) in zip(a, a[1:]))
    assert a and a[-1][1] <= 300


def arm(name, jobs, task_s, queue, median_task=1.0):
    return {"arm": name, "job_s": jobs, "stage_s": [j / 2 for j in jobs], "task_seconds": task_s,
            "speculative_attempts": 0, "queue_delay_p50_s": queue, "queue_delay_p90_s": queue,
            "median_task_s": median_task, "victim_task_fraction": 0.3, "straggler_fraction": 0.1, "holds": 0,
            "held_s": 0.0, "wall_s": sum(jobs)}


def test_summary_ratios_are_against_default_and_speculation_of_the_same_run():
    runs = [arm("default", [10, 20], 100, 0.5), arm("speculation", [10, 10], 120, 0.5),
            arm("wrangler", [5, 10], 90, 0.7)]
    s = summarize(runs, ["default", "speculation", "wrangler"])
    assert s["wrangler"]["job"]["p50"] == 7.5
    assert s["wrangler"]["vs_default"]["job_p99"] == pytest.approx(s["wrangler"]["job"]["p99"] / s["default"]["job"]["p99"])
    assert s["wrangler"]["vs_speculation"]["task_seconds"] == pytest.approx(90 / 120)
    assert s["wrangler"]["delay_overhead_pct_of_task"] == pytest.approx(20.0)
    assert s["default"]["vs_default"]["job_p99"] == 1.0
