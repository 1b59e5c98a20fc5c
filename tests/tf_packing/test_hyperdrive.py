"""HyperDrive's POP policy: curve prediction with honest spread, confidence, ERT, kills and slot split."""

from __future__ import annotations

import numpy as np
import pytest

from tf_packing import HyperDrive, KillRule
from tf_packing.tuner.hyperdrive import outlook, predict, promising_slots


def saturating(n, top=0.95, rate=0.35, noise=0.01, seed=0):
    """An accuracy curve rising to ``top``: ``top - (top - 0.1) exp(-rate k)`` plus Gaussian noise."""
    k = np.arange(1, n + 1)
    return top - (top - 0.1) * np.exp(-rate * k) + np.random.default_rng(seed).normal(0, noise, n)


def test_predicted_intervals_cover_the_rest_of_the_curve_about_as_often_as_they_claim():
    inside = total = 0
    for seed in range(40):
        curve = saturating(30, top=0.8 + 0.004 * seed, rate=0.2 + 0.01 * seed, seed=seed)
        seen, rest = curve[:10], curve[10:]
        fits = predict(seen, 20)
        mean, std = max(fits, key=lambda f: -np.mean(np.abs(f[0] - rest)))  # the worse family, to be strict
        inside += int(np.sum(np.abs(rest - mean) <= 1.96 * np.maximum(std, 0.01)))
        total += len(rest)
    assert inside / total > 0.8  # nominal 95%; a bounded family may be optimistic far ahead


def test_confidence_rises_with_the_curve_and_ert_counts_epochs_to_the_target():
    slow = outlook(saturating(8, top=0.7), 0.9, 20)
    fast = outlook(saturating(8, top=0.97, rate=0.6), 0.9, 20)
    assert slow.confidence < 0.05 < 0.95 < fast.confidence
    assert 0 <= fast.ert <= 3  # already near 0.9 after 8 epochs
    assert np.all(np.diff(fast.cdf) >= 0) and fast.cdf[-1] == pytest.approx(fast.confidence)
    assert outlook(saturating(5), 0.9, 20) is None  # too few epochs for both families' spread


def test_kills_need_the_boundary_and_both_families_to_agree():
    rule = HyperDrive(target=0.9, boundary=6)
    flat = [0.10, 0.12, 0.11, 0.12, 0.115, 0.12, 0.118]
    assert not rule.should_kill(flat[:5], epochs_left=20)  # before the boundary
    assert rule.should_kill(flat, epochs_left=20)
    assert not rule.should_kill(saturating(8, top=0.97, rate=0.6), epochs_left=20)
    assert not rule.should_kill(flat, epochs_left=20, best=None) or rule.target is not None
    assert HyperDrive(boundary=1).should_kill([0.2, float("nan")], epochs_left=5)  # diverged
    assert not HyperDrive().should_kill(flat, epochs_left=20, best=None)  # no target, no best yet: no judgement
    assert HyperDrive(kill_threshold=0.15, boundary=3).should_kill(flat[:3], epochs_left=20)
    assert KillRule(0.15, 3).should_kill(flat[:3], epochs_left=20, best=0.9)  # same protocol


def test_a_slow_starter_is_not_killed_on_the_fast_saturating_family_alone():
    k = np.arange(1, 9)
    slow_starter = 0.1 + 0.85 * k ** 2 / (k ** 2 + 60)  # sigmoidal: flat start, then climbs to 0.95
    assert slow_starter[-1] < 0.6
    assert not HyperDrive(target=0.9, boundary=6).should_kill(slow_starter, epochs_left=19)


def test_promising_slots_is_where_desired_meets_deserved():
    assert promising_slots([0.9, 0.8, 0.2, 0.01], [3, 4, 9, 20], slots=4, epochs_left=10) == (2, 0.8)
    assert promising_slots([0.99] * 10, [2] * 10, slots=4, epochs_left=10) == (3, 0.99)  # deserved caps it
    assert promising_slots([0.5], [30], slots=4, epochs_left=10) == (0, 1.0)  # nobody fits the budget
    labels = HyperDrive(target=0.9, boundary=6).classify(
        {"fast": list(saturating(8, top=0.97, rate=0.6)), "flat": [0.1, 0.12, 0.11, 0.12, 0.115, 0.12, 0.118],
         "young": [0.2, 0.3]}, epochs_left={"fast": 19, "flat": 20, "young": 25}, slots=4)
    assert labels == {"fast": "promising", "flat": "poor", "young": "opportunistic"}


def test_bad_settings_say_what_is_expected():
    with pytest.raises(ValueError, match="boundary must be >= 1 epoch"):
        HyperDrive(boundary=0)
    with pytest.raises(ValueError, match="delta must be in \\(0, 1\\)"):
        HyperDrive(delta=1.5)
