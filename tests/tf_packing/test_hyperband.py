"""Hyperband oracle: the spec's R=81, eta=3 table, closed-form properties, keep-best, state round trip."""

from __future__ import annotations

import doctest
import json
import math
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from spark_plugin.errors import UsageError
from tf_packing.tuner import hyperband
from tf_packing.tuner.hyperband import (TABLE_2_3, HyperbandOracle, bracket_rungs, bracket_size, max_bracket,
                                  rung_epochs, search_space_size)



def test_thesis_brackets_r81_eta3():
    assert max_bracket(81, 3) == 4
    assert {s: bracket_rungs(s, 81, 3) for s in range(4, -1, -1)} == {
        4: [(81, 1), (27, 3), (9, 9), (3, 27), (1, 81)],
        3: [(34, 3), (11, 9), (3, 27), (1, 81)],
        2: [(15, 9), (5, 27), (1, 81)],
        1: [(8, 27), (2, 81)],
        0: [(5, 81)],
    }
    assert search_space_size(TABLE_2_3) == 1056


def test_other_tables():
    assert [bracket_rungs(s, 9, 3) for s in (2, 1, 0)] == [[(9, 1), (3, 3), (1, 9)], [(5, 3), (1, 9)], [(3, 9)]]
    assert [bracket_rungs(s, 8, 2) for s in (3, 2, 1, 0)] == [
        [(8, 1), (4, 2), (2, 4), (1, 8)], [(6, 2), (3, 4), (1, 8)], [(4, 4), (2, 8)], [(4, 8)]]
    assert rung_epochs(1, 0, 10, 3) == 4  # 10/3 rounded up to whole epochs


@settings(max_examples=200, deadline=None, derandomize=True)
@given(R=st.integers(1, 3000), eta=st.integers(2, 6))
def test_bracket_maths_matches_closed_form(R, eta):
    s_max = max_bracket(R, eta)
    assert eta ** s_max <= R < eta ** (s_max + 1)
    for s in range(s_max + 1):
        rungs = bracket_rungs(s, R, eta)
        n = bracket_size(s, R, eta)
        assert n == math.ceil((s_max + 1) * eta ** s / (s + 1) - 1e-9)
        assert len(rungs) == s + 1 and rungs[-1][1] == R and rungs[0][0] == n
        for (n_i, r_i), (n_next, r_next) in zip(rungs, rungs[1:]):
            assert n_next == n_i // eta  # keeping floor(n_i/eta) gives the next rung's size
            assert r_i <= r_next


def drive(oracle, score):
    """Run the whole search, scoring each trial with ``score(trial, epochs)``; return the rung log."""
    log = []
    while (rung := oracle.next_rung()) is not None:
        scores = {t.trial_id: score(t, rung.epochs) for t in rung.trials}
        kept = oracle.end_rung(scores)
        log.append((rung.bracket, rung.index, len(rung.trials), rung.epochs, kept))
    return log


def test_full_sweep_keeps_the_best():
    oracle = HyperbandOracle(TABLE_2_3, max_epochs=9, factor=3, seed=1)
    quality = lambda t: TABLE_2_3["learning_rate"].index(t.config["learning_rate"]) + t.trial_id / 1000
    log = drive(oracle, lambda t, e: quality(t))
    assert [(b, i, n, e) for b, i, n, e, _ in log] == [(2, 0, 9, 1), (2, 1, 3, 3), (2, 2, 1, 9),
                                                       (1, 0, 5, 3), (1, 1, 1, 9), (0, 0, 3, 9)]
    first_rung = [t for t in oracle.trials_.values() if t.bracket == 2]
    kept = log[0][4]
    best3 = sorted(first_rung, key=quality, reverse=True)[:3]
    assert kept == [t.trial_id for t in best3]  # the best, not the worst (the reference code's bug)
    assert len(oracle.trials_) == 9 + 5 + 3
    best = oracle.best_trial()
    assert best.status == "completed" and best.epochs_done == 9
    assert best.score == max(t.score for t in oracle.trials_.values() if t.status == "completed")


def test_min_mode_and_killed_trials_are_never_promoted():
    oracle = HyperbandOracle({"x": list(range(20))}, max_epochs=3, factor=3, mode="min", seed=0)
    rung = oracle.next_rung()
    scores = {t.trial_id: t.config["x"] for t in rung.trials}
    best = min(rung.trials, key=lambda t: t.config["x"])
    kept = oracle.end_rung(scores, killed=[best.trial_id])
    assert best.trial_id not in kept and best.status == "killed"
    survivors = sorted((t for t in rung.trials if t is not best), key=lambda t: t.config["x"])
    assert kept == [survivors[0].trial_id]


def test_state_round_trip_resumes_identically():
    a = HyperbandOracle(TABLE_2_3, max_epochs=9, factor=3, seed=4)
    rung = a.next_rung()
    a.end_rung({t.trial_id: t.trial_id % 5 for t in rung.trials})
    state = json.loads(json.dumps(a.get_state()))
    b = HyperbandOracle(TABLE_2_3, max_epochs=9, factor=3, seed=999)
    b.set_state(state)
    score = lambda t, e: (t.trial_id * 7) % 11 + e
    assert drive(a, score) == drive(b, score)
    assert [t.config for t in a.trials_.values()] == [t.config for t in b.trials_.values()]


def test_sampling_is_without_replacement_within_a_bracket():
    oracle = HyperbandOracle(TABLE_2_3, max_epochs=81, factor=3, seed=0)
    rung = oracle.next_rung()
    configs = [tuple(t.config.values()) for t in rung.trials]
    assert len(configs) == 81 and len(set(configs)) == 81


def test_errors_name_argument_and_fix():
    with pytest.raises(UsageError, match=r"^factor \(eta\) must be a whole number in \[2, 100\]. Got 1. The thesis "
                                         r"uses eta=3.$"):
        HyperbandOracle(TABLE_2_3, factor=1)
    with pytest.raises(UsageError, match=r"^max_epochs \(R\) must be a whole number in \[1, 10000\]. Got 0. The "
                                         r"thesis uses R=81.$"):
        max_bracket(0, 3)
    with pytest.raises(UsageError, match=r"max_epochs \(R\) must be a whole number in \[1, 10000\]. Got 3.0."):
        max_bracket(3.0, 3)
    with pytest.raises(ValueError, match="mode must be 'max'"):
        HyperbandOracle(TABLE_2_3, mode="best")
    oracle = HyperbandOracle(TABLE_2_3, max_epochs=3)
    with pytest.raises(ValueError, match="missing"):
        oracle.end_rung({})


def test_doctests():
    assert doctest.testmod(hyperband).failed == 0


def test_policy_modules_import_no_tensorflow():
    code = ("import sys, tf_packing, tf_packing.repack.batching, tf_packing.tuner.hyperband, tf_packing.tuner.packing_policy, "
            "tf_packing.repack.memory, tf_packing.tuner.early_kill; print(sorted(m for m in ('tensorflow', 'keras') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_an_oracle_made_without_a_space_samples_once_given_one():
    oracle = hyperband.HyperbandOracle(max_epochs=3, factor=3, seed=0)
    with pytest.raises(ValueError, match=r"has no search space: pass search_space=, or pass the oracle to a Tuner"):
        oracle.next_rung()
    oracle.update_space({"lr": [0.1, 0.01]})
    given = hyperband.HyperbandOracle({"lr": [0.1, 0.01]}, max_epochs=3, factor=3, seed=0)
    assert [t.config for t in oracle.next_rung().trials] == [t.config for t in given.next_rung().trials]
