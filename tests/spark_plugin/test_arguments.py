"""An argument is checked by its configuration key's rule, in one line that names the argument and the key."""

from __future__ import annotations

import math

import pytest

from spark_plugin.arguments import Parser, by_key, key_option, number, whole_number, whole_number_option
from spark_plugin.errors import UsageError
from spark_plugin.keys import KEYS


@pytest.mark.parametrize("value", [0, -1, "", None, "4.5", True, 10 ** 9])
def test_a_bad_value_is_refused_by_the_keys_rule_never_replaced_by_the_default(value):
    with pytest.raises(UsageError, match=r"^JobGate's max_in_flight must be an integer in \[1, 100000\] "
                                         r"\(as spark.yaq.maxInFlight\)\. Got .*\. Pass e.g. 4\.$"):
        by_key("spark.yaq.maxInFlight", value, what="JobGate's max_in_flight")


def test_a_good_value_parses_as_the_key_parses_it():
    assert by_key("spark.yaq.maxInFlight", 3, what="x") == 3
    assert by_key("spark.yaq.policy", "FIFO", what="x") == "fifo"
    assert by_key("spark.yaq.starvation.threshold", "90s", what="x") == 90_000


def test_every_keys_rule_refuses_what_its_parse_refuses():
    """The argument rule is the key's own: for every key, the two agree on a sample of values."""
    for key in KEYS:
        for raw in ("", "0", "-1", "1", "0.5", "1e12", "true", "x", key.default or "1"):
            try:
                expected = key.parse(raw)
            except ValueError:
                with pytest.raises(UsageError, match=key.name.replace(".", r"\.")):
                    by_key(key.name, raw, what="arg")
            else:
                assert by_key(key.name, raw, what="arg") == expected


@pytest.mark.parametrize("value", [0, 101, -3, 2.5, "7", True])
def test_a_whole_number_outside_its_range_is_refused_with_the_fix(value):
    with pytest.raises(UsageError, match=r"^--batches must be a whole number in \[1, 100\]\. Got .*\. Use fewer\.$"):
        whole_number(value, what="--batches", low=1, high=100, fix="Use fewer.")


@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0, 0.0, "1"])
def test_a_number_outside_its_range_is_refused(value):
    with pytest.raises(UsageError, match=r"^ratio must be a finite number > 0 and <= 10\. Got "):
        number(value, what="ratio", low=0, high=10, low_open=True)
    assert number(10, what="ratio", low=0, high=10, low_open=True) == 10.0


def test_the_command_line_says_one_line_and_exits_2(capsys):
    parser = Parser(prog="prog")
    parser.add_argument("--confidence", type=key_option("spark.wrangler.confidence", "--confidence"))
    parser.add_argument("--packs", type=whole_number_option("--packs", low=1, high=64))
    for argv, says in ((["--confidence", "5"], r"--confidence must be a number in \[0, 1\) "
                                               r"\(as spark.wrangler.confidence\)\. Got '5'"),
                       (["--packs", "0"], r"--packs must be a whole number in \[1, 64\]\. Got 0\."),
                       (["--packs", "x"], r"--packs must be a whole number in \[1, 64\]\. Got 'x'\.")):
        with pytest.raises(SystemExit) as exit_:
            parser.parse_args(argv)
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and err.count("\n") == 1 and err.startswith("error: --")
        assert __import__("re").search(says, err), err
    assert parser.parse_args(["--confidence", "0.5", "--packs", "64"]).packs == 64
