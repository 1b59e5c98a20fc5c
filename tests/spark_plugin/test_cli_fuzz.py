"""Every option of every command line, fed malformed, out-of-range and wrong-type values.

The command-line twin of ``test_key_fuzz.py``. Whatever a user types after an option, the command either
takes it or refuses it in one line on stderr with exit status 2: never a traceback, never a second line,
never another status. Options are read off each command's own parser (every command builds on
:class:`spark_plugin.arguments.Parser`), so an option added later is fuzzed without touching this file.

Nothing runs for real here: a value the command takes reaches a tripwire where its work would start (a Spark
session, a training run, a server, the harness) and counts as taken. Every numeric option of the product's
commands must also be checked by a rule (:mod:`spark_plugin.arguments`): a bare ``type=int`` lets ``-3`` or
``10**9`` through to the work.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings, strategies as st

from spark_plugin.arguments import Parser

#: Fixed examples: the suite sees the same values every run (house rule 13).
FUZZ = settings(max_examples=20, derandomize=True, deadline=None)

#: Where the commands run; a file in it is a folder no output can be created under.
SCRATCH = Path(tempfile.mkdtemp(prefix="sparkrm-cli-fuzz-"))
BLOCKED = SCRATCH / "a-file"
BLOCKED.write_text("")

#: Values users mistype, beside the generated ones: signs, bounds, special floats, lists, paths, blanks.
MISTYPED = ["", " ", "-1", "0", "-0", "1.5", "1e309", "-1e309", "nan", "inf", "99999999999999999999", "0x10",
            "\u0661\u0662", "x", "a,b", ",", "1,1", "0,0", "-", "--", "/", str(BLOCKED / "x"), "x" * 300,
            "spark.x=1", "=", "local[0]", "UNTIL", "1-", "3-1"]
VALUES = st.sampled_from(MISTYPED) | st.text(min_size=0, max_size=20).filter(lambda s: "\x00" not in s)


class _WorkWouldStart(BaseException):
    """Raised by a tripwire: the command took its arguments and would start its work (not an error to catch)."""


def _trip(*_, **__):
    raise _WorkWouldStart


@dataclass(frozen=True)
class Command:
    """A command line: its ``main``, the arguments that make it runnable, where its work starts."""

    name: str
    main: str  # module:function
    argv: tuple[str, ...]
    tripwires: tuple[str, ...] = ()
    product: bool = True  #: a command of the package (its numeric options must have rules), not a benchmark's
    positionals: tuple[int, ...] = ()  #: where in ``argv`` its positional arguments are, fuzzed in place

    def run(self, argv: list[str]) -> tuple[int | None, str]:
        """Exit status (None: the work would have started) and stderr of ``main(argv)``."""
        module, function = self.main.split(":")
        main = getattr(__import__(module, fromlist=[function]), function)
        err = io.StringIO()
        with contextlib.ExitStack() as stack:
            for target in self.tripwires:
                stack.enter_context(mock.patch(target, _trip))
            stack.enter_context(contextlib.redirect_stderr(err))
            stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
            stack.enter_context(contextlib.chdir(SCRATCH))
            try:
                status = main(argv)
            except SystemExit as e:
                status = e.code if isinstance(e.code, int) else 2
            except _WorkWouldStart:
                status = None
        return status, err.getvalue()


MISSING = str(SCRATCH / "missing.jsonl")
COMMANDS = [
    Command("rotary run", "spark_plugin.rotary.__main__:main", ("run", "5", "--data", str(SCRATCH / "data")),
            ("spark_plugin.session",), positionals=(1,)),
    Command("rotary sql", "spark_plugin.rotary.__main__:main",
            ("sql", "select k, sum(v) from t group by k", "--table", f"t={SCRATCH}"), ("spark_plugin.session",),
            positionals=(1,)),
    Command("rotary prepare", "spark_plugin.rotary.__main__:main", ("prepare", str(SCRATCH), "--key", "k"),
            ("spark_plugin.session",), positionals=(1,)),
    Command("advisor", "spark_plugin.advisor.__main__:main", (MISSING,), positionals=(0,)),
    Command("wrangler train", "spark_plugin.wrangler.__main__:main",
            ("train", MISSING, "--out", str(SCRATCH / "m.joblib")), positionals=(1,)),
    Command("wrangler evaluate", "spark_plugin.wrangler.__main__:main", ("evaluate", MISSING, MISSING),
            positionals=(1, 2)),
    Command("wrangler choose", "spark_plugin.wrangler.__main__:main", ("choose", MISSING, MISSING),
            positionals=(1, 2)),
    Command("wrangler export", "spark_plugin.wrangler.__main__:main",
            ("export", MISSING, "--out", str(SCRATCH / "m.json")), positionals=(1,)),
    Command("pigeon pools", "spark_plugin.pigeon.__main__:main", ("pools", "--cores", "4")),
    Command("slaq coordinator", "spark_plugin.slaq.__main__:main", ("coordinator", "--cores", "4"),
            ("spark_plugin.slaq.__main__.Coordinator",)),
    Command("sparkrm validate", "spark_plugin.__main__:main", ("validate", MISSING), positionals=(1,)),
    Command("sparkrm submit-args", "spark_plugin.__main__:main", ("submit-args",)),
    Command("sparkrm docs", "spark_plugin.__main__:main", ("docs", "--project", str(SCRATCH / "nowhere"))),
    Command("benchmarks.tpch", "benchmarks.tpch.cli:main", ("--out", str(SCRATCH / "tpch-out"), "--no-progress"),
            ("benchmarks.tpch.cli.run",), product=False),
    Command("benchmarks.dlt", "benchmarks.dlt.__main__:main", ("--out", str(SCRATCH / "dlt-out")),
            ("tf_packing.load_digits",), product=False),
    Command("benchmarks.advisor", "benchmarks.advisor.__main__:main", ("--out", str(SCRATCH / "advisor-out"),),
            ("benchmarks.advisor.__main__.collect", "benchmarks.advisor.slaq.measure",
             "benchmarks.advisor.jobs.measure"), product=False),
]


def _parser(command: Command) -> argparse.ArgumentParser:
    """The (sub)parser of ``command``, as its ``main`` builds it."""
    captured = []

    def capture(self, *_, **__):
        captured.append(self)
        raise _WorkWouldStart

    with mock.patch.object(Parser, "parse_args", capture):
        command.run(list(command.argv))
    parser = captured[0]
    for word in command.argv:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is None or word not in sub.choices:
            break
        parser = sub.choices[word]
    return parser


def _valued_options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The options that take one value (not flags, not --help)."""
    return [a for a in parser._actions if a.option_strings and a.nargs is None and a.const is None
            and not isinstance(a, (argparse._HelpAction, argparse._StoreTrueAction, argparse._StoreFalseAction,
                                   argparse._VersionAction))]


#: (command, an option, or the index in its argv of a positional argument).
CASES = [(command, option.option_strings[-1]) for command in COMMANDS for option in _valued_options(_parser(command))]
CASES += [(command, index) for command in COMMANDS for index in command.positionals]


def _argv(command: Command, where, value: str) -> list[str]:
    """``command``'s arguments with ``value`` after option ``where``, or in place of its positional ``where``."""
    if isinstance(where, str):
        return [*command.argv, where, value]
    return [*command.argv[:where], value, *command.argv[where + 1:]]


def test_every_command_line_is_fuzzed():
    assert {c.name for c, _ in CASES} == {c.name for c in COMMANDS}


@pytest.mark.parametrize("command,where", CASES, ids=[f"{c.name} {w if isinstance(w, str) else f'ARG{w}'}"
                                                      for c, w in CASES])
@FUZZ
@given(value=VALUES)
def test_a_value_is_taken_or_refused_in_one_line(command, where, value):
    argv = _argv(command, where, value)
    status, err = command.run(argv)
    if status is None or status == 0:
        return
    assert status == 2, f"{command.name} {argv}: exit status {status}: {err}"
    assert "Traceback" not in err and err.endswith("\n") and err.count("\n") == 1, \
        f"{command.name} {argv}: not one line:\n{err}"


def test_every_numeric_option_of_the_product_is_checked_by_a_rule():
    """``type=int`` or ``type=float`` alone takes any size or sign: each numeric option has a rule instead."""
    bare = [f"{c.name} {a.option_strings[-1]}" for c in COMMANDS if c.product
            for a in _valued_options(_parser(c)) if a.type in (int, float)]
    assert not bare, f"options with no range: {bare}; use spark_plugin.arguments' key_option, whole_number_option " \
                     "or number_option"
