"""Riveter's redo-vs-suspend cost model (thesis Alg. 7 and 8), pure Python."""

import math

import pytest

from spark_plugin.rotary import riveter
from spark_plugin.rotary.riveter import PIPELINE, REDO, DiskSpeed, TerminationWindow

WINDOW = TerminationWindow(start_s=86, end_s=108, probability=0.3)  # the thesis's Q1 at SF 100
DISK = DiskSpeed(write_bps=100e6, read_bps=200e6, fixed_suspend_s=0.1, fixed_resume_s=0.5)


@pytest.mark.parametrize("now, until, expected", [
    (10, 50, 0.0),  # the next breaker comes before the window
    (10, 86, 0.0),
    (80, 97, 0.15),  # it falls half way into the window: half the probability
    (80, 108, 0.3),  # it reaches the window's end
    (90, 91, 0.3),  # the window has begun
    (120, 125, 0.3),
])
def test_the_overlap_rule(now, until, expected):
    assert riveter.termination_probability(now, until, WINDOW) == pytest.approx(expected)


def test_far_from_the_window_the_query_runs_on():
    decision = riveter.choose(now_s=10, mean_step_s=5, state_bytes=1e3, window=WINDOW, disk=DISK)
    assert decision.strategy == REDO
    assert decision.costs[REDO] == 0 and decision.costs[PIPELINE] == pytest.approx(0.6, abs=1e-3)


def test_when_the_next_step_may_be_cut_off_a_small_state_is_suspended():
    decision = riveter.choose(now_s=84, mean_step_s=5, state_bytes=1e3, window=WINDOW, disk=DISK)
    assert decision.strategy == PIPELINE
    assert decision.costs[REDO] == pytest.approx(3 / 22 * 0.3 * 108)


def test_a_state_too_big_for_memory_or_too_slow_to_write_is_not_suspended():
    assert riveter.choose(84, 5, 1e9, WINDOW, DISK, free_memory=1e8).costs[PIPELINE] == math.inf
    assert riveter.choose(84, 5, 1e9, WINDOW, DISK, free_memory=1e8).strategy == REDO
    # 5 GB take 50 s to write and 25 s to read: more than the expected loss of running on
    assert riveter.choose(84, 5, 5e9, WINDOW, DISK).strategy == REDO


def test_suspending_inside_the_window_risks_the_work_done_so_far():
    # the window has begun: the suspension itself may be cut off, losing the 95 s done
    cost = riveter.pipeline_cost(95, 1e3, math.inf, DISK, WINDOW)
    assert cost == pytest.approx(0.1 + 1e3 / 100e6 + 0.5 + 1e3 / 200e6 + 0.3 * 95)
    assert riveter.redo_cost(95, 5, WINDOW) == pytest.approx(0.3 * 108)


@pytest.mark.parametrize("args, message", [
    ((10, 10, 0.5), "0 <= start < end"),
    ((-1, 10, 0.5), "0 <= start < end"),
    ((0, 10, 1.5), r"probability lies in \[0, 1\]"),
])
def test_bad_windows_are_refused(args, message):
    with pytest.raises(ValueError, match=message):
        TerminationWindow(*args)


def test_the_disk_speed_is_measured_where_checkpoints_go(tmp_path):
    disk = DiskSpeed.measure(tmp_path / "ckpt", size=1 << 20)
    assert disk.write_bps > 0 and disk.read_bps > 0
    assert list((tmp_path / "ckpt").iterdir()) == []  # the probe file is gone
