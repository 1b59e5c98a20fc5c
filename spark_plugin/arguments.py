"""Arguments checked where they enter, by one rule each.

A command-line option or an API argument that sets what a configuration key sets (``wrangler evaluate
--confidence``, ``JobGate(max_in_flight=...)``) is checked by that key's own rule (:class:`~spark_plugin.config.Key`:
type, range, options), so the two can never disagree. An argument with no key but whose work grows with its
value (batches, packs, groups) is checked by :func:`whole_number` against a range with an upper bound.
Both raise :class:`~spark_plugin.errors.UsageError` (a ``ValueError``) with one line naming the argument, the
value, what is accepted and the fix; :func:`key_option` and :func:`whole_number_option` give argparse types that
report the same line.
"""

from __future__ import annotations

import argparse
import functools
import math
import re
from dataclasses import dataclass
from numbers import Integral, Real

from .errors import ConfigError, UsageError, printable
from .keys import KEYS


def by_key(key: str, value, *, what: str):
    """``value`` of argument ``what``, parsed and range-checked by configuration key ``key``'s rule.

    Returns the parsed value (an enum lower-cased, a size in bytes, a duration in milliseconds)."""
    rule = KEYS[key]
    if value is None or isinstance(value, bool) and rule.kind != "bool":
        raise UsageError(f"{what} must be {rule.expected()} (as {key}). Got {value!r}. {_fix(rule)}")
    try:
        return rule.parse(str(value))
    except ConfigError:
        raise UsageError(f"{what} must be {rule.expected()} (as {key}). Got {value!r}. {_fix(rule)}") from None


def seconds_by_key(key: str, seconds, *, what: str) -> float:
    """``seconds`` (a number of seconds, as Yaq's and Pigeon's API take them) checked by duration key ``key``'s
    rule, which counts milliseconds; returns the seconds."""
    ms = number(seconds, what=what) * 1000
    return by_key(key, f"{ms:.0f}ms", what=f"{what} ({seconds!r} s)") / 1000.0


def whole_number(value, *, what: str, low: int, high: int, fix: str = "") -> int:
    """``value`` of argument ``what`` once it is a whole number in ``[low, high]``.

    ``high`` bounds work that grows with the number; ``fix`` says what to pass instead."""
    if isinstance(value, bool) or not isinstance(value, Integral) or not low <= value <= high:
        raise UsageError(f"{what} must be a whole number in [{low}, {high}]. Got {value!r}."
                         + (f" {fix}" if fix else ""))
    return int(value)


def number(value, *, what: str, low: float | None = None, high: float | None = None, low_open: bool = False,
           high_open: bool = False, fix: str = "") -> float:
    """``value`` of argument ``what`` once it is a finite number in the range given."""
    ok = isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (low is None or (value > low if low_open else value >= low))
    ok = ok and (high is None or (value < high if high_open else value <= high))
    if not ok:
        bound = " and ".join(b for b in ((f"> {low:g}" if low_open else f">= {low:g}") if low is not None else "",
                                         (f"< {high:g}" if high_open else f"<= {high:g}") if high is not None else "")
                             if b)
        raise UsageError(f"{what} must be a finite number{' ' + bound if bound else ''}. Got {value!r}."
                         + (f" {fix}" if fix else ""))
    return float(value)


@dataclass(frozen=True)
class Range:
    """The rule of a number argument that no configuration key sets, declared once and applied both where an
    API takes it (:meth:`check`) and where a command line parses it (:meth:`option`).

    ``whole`` makes it :func:`whole_number`'s rule (``low`` and ``high`` both required), else :func:`number`'s."""

    low: float | None = None
    high: float | None = None
    whole: bool = False
    low_open: bool = False
    high_open: bool = False
    fix: str = ""

    def check(self, value, *, what: str):
        """``value`` of argument ``what`` once it follows the rule (an int for a whole number, else a float)."""
        if self.whole:
            return whole_number(value, what=what, low=self.low, high=self.high, fix=self.fix)
        return number(value, what=what, low=self.low, high=self.high, low_open=self.low_open,
                      high_open=self.high_open, fix=self.fix)

    def option(self, option: str):
        """The argparse ``type=`` of ``option`` by this rule."""
        return checked_option(self.check, option, int if self.whole else float)


class Parser(argparse.ArgumentParser):
    """argparse whose complaints are one line (``error: ...``, the way to ``--help``) and exit status 2.

    Every sparkrm command line is built on it (sub-commands inherit it), so a bad option reads like every other
    bad input here instead of argparse's usage block."""

    def error(self, message):
        said = re.fullmatch(r"argument (\S+): (.*)", message, re.S)
        if said and said[2].startswith(said[1].split("/")[-1] + " "):  # our rule's message names the option
            message = said[2]
        self.exit(2, f"error: {printable(message)} (see {self.prog} --help)\n")


def key_option(key: str, option: str):
    """An argparse ``type=`` that checks an option by key ``key``'s rule (e.g. ``--confidence``)."""
    def parse(text: str):
        try:
            return by_key(key, text, what=option)
        except UsageError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    parse.__name__ = KEYS[key].kind
    return parse


def whole_number_option(option: str, **rule):
    """An argparse ``type=`` for a whole-number option, by :func:`whole_number`'s ``rule`` (``low``, ``high``, ``fix``)."""
    return checked_option(functools.partial(whole_number, **rule), option, int)


def number_option(option: str, **rule):
    """An argparse ``type=`` for a number option, by :func:`number`'s ``rule`` (``low``, ``high``, ...)."""
    return checked_option(functools.partial(number, **rule), option, float)


def checked_option(check, option: str, convert=float):
    """An argparse ``type=`` applying the rule an API applies to the same argument: the text converted (left as
    text when it does not convert, so the message shows it), then ``check(value, what=option)``; a
    :class:`UsageError` becomes argparse's one-line error."""
    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            value = text
        try:
            return check(value, what=option)
        except UsageError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    parse.__name__ = convert.__name__
    return parse


def _fix(rule) -> str:
    return f"Pass e.g. {rule.example or rule.default}." if (rule.example or rule.default) else ""
