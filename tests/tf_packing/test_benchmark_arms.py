"""The executors benchmark's arm names (no Spark, no TensorFlow)."""

import re

import pytest

from benchmarks.repack.executors import parse_arm


@pytest.mark.parametrize("arm, parsed", [
    ("local", ("local", None, False)),
    ("spark-2", ("spark", 2, False)),
    ("spark-2+kill", ("spark", 2, True)),
    ("keras-tuner-3", ("keras-tuner", 3, False)),
    ("spark-2@again", ("spark", 2, False)),  # the same arm run again under another name: A/A
])
def test_arms_parse_to_kind_count_and_kill(arm, parsed):
    assert parse_arm(arm) == parsed


@pytest.mark.parametrize("arm", ["spark-0", "spark-1+kill", "keras-tuner-2+kill", "ray-2", "spark-2+stop"])
def test_a_bad_arm_names_the_accepted_forms(arm):
    with pytest.raises(ValueError, match=rf"^arm {re.escape(repr(arm))}: use .local., .spark-N."):
        parse_arm(arm)


def test_a_name_runs_again_under_a_label_but_not_twice_bare():
    """The DLT and Rotary benchmarks' --arms and --policies: NAME@LABEL is an A/A run of NAME."""
    from benchmarks.common import labelled_names_problem

    known = {"fifo": 0, "rotary-dlt": 1}
    assert labelled_names_problem(["fifo", "rotary-dlt", "rotary-dlt@again"], known, "--arms") is None
    assert labelled_names_problem(["edf"], known, "--arms") == "unknown --arms ['edf']; choose from fifo,rotary-dlt"
    assert labelled_names_problem(["fifo@x@y", "fifo"], known, "--arms") is None  # the label is whatever follows @
    assert "run it again under a label instead, e.g. fifo,fifo@again" in labelled_names_problem(
        ["fifo", "fifo"], known, "--arms")
