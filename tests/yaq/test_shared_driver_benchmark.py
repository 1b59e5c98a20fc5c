"""The shared-driver benchmark's arithmetic: seeded arrivals, per-run summaries, ratios over seeds."""

import argparse

import pytest

from benchmarks.shared_driver import mixed
from benchmarks.shared_driver.__main__ import _arms


def test_arrivals_are_seeded_short_queries_within_the_window():
    a = mixed.arrivals(0, 2.0, 60.0)
    assert a == mixed.arrivals(0, 2.0, 60.0) and a != mixed.arrivals(1, 2.0, 60.0)
    assert all(0 < t < 60 for t, _ in a) and {q for _, q in a} <= set(mixed.SHORT_QUERIES)
    assert 15 <= len(a) <= 45  # about 30 at a 2 s mean gap
    assert [t for t, _ in a] == sorted(t for t, _ in a)


def test_a_run_is_summarized_by_the_short_median_and_the_long_p99():
    run = {"short": [{"seconds": s} for s in (1.0, 3.0, 2.0)],
           "long": [{"seconds": float(s)} for s in range(1, 101)], "gate_waits_s": [0.0, 4.5]}
    assert mixed.summarize(run) == {"short_median_s": 2.0, "long_p99_s": 99.0, "longest_gate_wait_s": 4.5,
                                    "shorts": 3, "longs": 100}
    assert mixed.summarize({**run, "long": [{"seconds": 7.0}], "gate_waits_s": []})["long_p99_s"] == 7.0


def test_each_arm_is_compared_with_fifo_and_fair_per_seed():
    def s(short, long_):
        return {"short_median_s": short, "long_p99_s": long_}

    results = {"2.0": {"0": {"fifo": s(10, 20), "fair": s(5, 22), "pigeon": s(2, 21)},
                       "1": {"fifo": s(8, 20), "fair": s(4, 20), "pigeon": s(2, 24)}}}
    c = mixed.compare(results, ["fifo", "fair", "pigeon"])["2.0"]
    assert c["pigeon"]["fifo"]["short_median_s"]["per_seed"] == [0.2, 0.25]
    assert c["pigeon"]["fair"]["long_p99_s"]["per_seed"] == pytest.approx([21 / 22, 24 / 20])
    assert "fair" not in c["fair"] and c["fair"]["fifo"]["short_median_s"]["mean"] == 0.5


def test_arms_are_named_from_the_table():
    assert _arms("fifo, pigeon") == ["fifo", "pigeon"]
    for bad in ("fifo,sjf", "fifo,fifo"):
        with pytest.raises(argparse.ArgumentTypeError, match="expected distinct arms among fifo, fair"):
            _arms(bad)
