"""Declaring, parsing and validating sparkrm configuration keys.

Every key lives once in :mod:`spark_plugin.keys` as a :class:`Key`. The same table
drives three things, so they cannot drift apart:

* validation here, before a session starts (the builder helper calls
  :func:`validate`);
* validation in the JVM at plugin start-up, for applications launched with
  ``spark-submit`` only: the table travels inside the jar as JSON
  (:meth:`KeyTable.to_json`) and the Java validator applies the same parsers and
  prints the same messages;
* the configuration table in docs/configuration.md and ``conf/spark-defaults.conf``.

Values are Spark configuration strings. Sizes and durations follow Spark's own
syntax (``JavaUtils.byteStringAsBytes`` and ``timeStringAsMs``): a plain number
of bytes or milliseconds, or a number with a unit suffix such as ``64k``,
``2m``, ``500ms`` or ``5s``. Values are trimmed as Java's ``String.trim`` trims (every
character up to a space), digits are ASCII only, and integers, sizes and durations must fit a
Java ``long``, because the JVM parses the same strings with those rules.

A ``file`` key names a file on the driver. Besides its value, :meth:`KeyTable.validate` checks the
file itself (:meth:`Key.file_problem`: it exists, is readable and, for a ``.json`` file, passes the check of
the system that owns the key), unless the application's driver runs elsewhere
(``spark.submit.deployMode=cluster``); the driver plugin checks it again at start-up, in the same words.
"""

from __future__ import annotations

import importlib
import json
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from .errors import ConfigError, printable

#: Prefix of the local properties that override a per-job key for one job (``spark.`` dropped):
#: Spark SQL copies the session configuration into every query's local properties, so the key's
#: own name would be overwritten there.
JOB_PREFIX = "sparkrm.job."

#: Configuration prefixes owned by this package. An unknown key under one of
#: them is an error (most likely a typo), never silently ignored.
NAMESPACES = (
    "spark.sparkrm.",
    "spark.riffle.",
    "spark.rotary.",
    "spark.slaq.",
    "spark.wrangler.",
    "spark.yaq.",
    "spark.pigeon.",
)

KINDS = ("bool", "int", "double", "size", "duration", "string", "enum", "file")

_INT = re.compile(r"[+-]?[0-9]+")
_DOUBLE = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
_SIZE = re.compile(r"([0-9]+)([a-z]+)?")
_DURATION = re.compile(r"(-?[0-9]+)([a-z]+)?")
#: A Java ``long``: the JVM parses integers, sizes and durations into one.
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1
#: What Java's ``String.trim`` removes from both ends.
_JAVA_BLANKS = "".join(chr(c) for c in range(0x21))
_SIZE_UNITS = {
    None: 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
    "g": 1 << 30, "gb": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "p": 1 << 50, "pb": 1 << 50,
}
_DURATION_MS = {
    None: 1, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000,
    "h": 3_600_000, "d": 86_400_000,
}


@dataclass(frozen=True)
class Key:
    """One configuration key: its type, default, accepted range and documentation.

    Parameters
    ----------
    name : str
        Full key, e.g. ``spark.sparkrm.telemetry.dir``.
    kind : {"bool", "int", "double", "size", "duration", "string", "enum", "file"}
        How the value string is parsed. Sizes parse to bytes, durations to
        milliseconds. A ``file`` parses as a non-empty string and names a file
        on the driver that :meth:`KeyTable.validate` checks.
    default : str or None
        Default as a configuration string; ``None`` means "unset".
    doc : str
        One or two sentences for the configuration table.
    low, high : float or None, default=None
        Inclusive bounds of the parsed value unless ``low_open``/``high_open``.
    options : tuple of str, default=()
        Accepted values of an ``enum`` key (compared case-insensitively).
    example : str or None, default=None
        A valid value shown in error messages when the key has no default.
    job_setting : str or None, default=None
        When a job may override the key (local property ``JOB_PREFIX`` + the key
        without ``spark.``), its argument name in the per-job helpers, e.g. ``fan_in``.
    since : str, default="0.1.0"
        Package version that introduced the key.
    check : str or None, default=None
        For a ``file`` key: ``module:function`` that takes the parsed document of a file whose name ends in
        ``.json`` and returns what is wrong with it (the rest of the message after the file's name) or
        ``None``. Named as data, so the core imports no system; the system registers the same check with
        the JVM (``dev.sparkrm.conf.JsonFileCheck``).
    fix_text : str or None, default=None
        The fix to print instead of the generated one (:meth:`fix`).
    """

    name: str
    kind: str
    default: str | None
    doc: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    options: tuple[str, ...] = ()
    example: str | None = None
    job_setting: str | None = None
    since: str = "0.1.0"
    check: str | None = None
    fix_text: str | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"Key {self.name}: kind must be one of {KINDS}, got {self.kind!r}")
        if not self.name.startswith(NAMESPACES):
            raise ValueError(f"Key {self.name} is outside the namespaces {NAMESPACES}")
        if self.default is not None:
            self.parse(self.default)  # a table entry with a bad default is a bug

    def expected(self) -> str:
        """Describe the accepted values, e.g. ``"a size > 0"``."""
        noun = {
            "bool": "true or false", "int": "an integer", "double": "a number",
            "size": "a size", "duration": "a duration", "string": "a non-empty string",
            "enum": "one of " + ", ".join(repr(o) for o in self.options),
            "file": "a readable file on the driver",
        }[self.kind]
        fmt = _format_size if self.kind == "size" else (
            _format_duration if self.kind == "duration" else _format_number)
        if self.low is not None and self.high is not None:
            lo, hi = "(" if self.low_open else "[", ")" if self.high_open else "]"
            return f"{noun} in {lo}{fmt(self.low)}, {fmt(self.high)}{hi}"
        if self.low is not None:
            return f"{noun} {'>' if self.low_open else '>='} {fmt(self.low)}"
        if self.high is not None:
            return f"{noun} {'<' if self.high_open else '<='} {fmt(self.high)}"
        return noun

    def fix(self) -> str:
        """Tell the user how to repair a bad value of this key."""
        if self.fix_text is not None:
            return self.fix_text
        if self.default is not None:
            return f"Set e.g. {self.example or self.default} or remove it for the default ({self.default})."
        return f"Set e.g. {self.example}." if self.example else "Set a valid value."

    def error(self, raw: str) -> str:
        """The message reported for an unacceptable value ``raw``."""
        return f"{self.name} must be {self.expected()}. Got '{printable(str(raw))}'. {self.fix()}"

    def file_problem(self, value: str) -> str | None:
        """The one-line message when ``value`` of this ``file`` key does not name a usable file, else ``None``.

        The file must exist and be readable; a ``.json`` one, when the key has a :attr:`check`, must also be
        JSON that passes it. ``SparkrmConf.fileProblem`` checks the same at plugin start-up, in the same words.
        """
        where, fix, path = f"{self.name}={printable(value)}", self.fix(), Path(value)
        try:
            mode = path.stat().st_mode
        except (OSError, ValueError):  # missing, a missing or non-folder parent, a NUL in the name
            return f"{where}: no such file. {fix}"
        if stat.S_ISDIR(mode):
            return f"{where} is a directory, not a file. {fix}"
        if not stat.S_ISREG(mode):
            return f"{where} is not a regular file. {fix}"
        checked = self.check is not None and value.endswith(".json")
        try:
            with path.open("rb") as f:
                data = f.read() if checked else b""
        except PermissionError:
            return f"{where} cannot be read (permission denied). {fix}"
        except OSError as e:
            return f"{where} cannot be read ({printable(e.strerror or str(e))}). {fix}"
        if not checked:
            return None
        try:
            document = json.loads(data.decode("utf-8-sig"), parse_constant=_refuse_constant)
        except (ValueError, RecursionError) as e:  # JSONDecodeError, UnicodeDecodeError, too long an integer
            return f"{where} cannot be read as JSON ({printable(str(e) or type(e).__name__)}). {fix}"
        module, _, function = self.check.partition(":")
        problem = getattr(importlib.import_module(module), function)(document)
        return None if problem is None else f"{where} {problem}. {fix}"

    def parse(self, raw: str):
        """Parse and range-check a configuration string.

        Returns
        -------
        bool, int, float or str
            Sizes in bytes, durations in milliseconds, enums lower-cased.

        Raises
        ------
        ConfigError
            If the value does not parse or is out of range.
        """
        value = _parse_kind(self, java_trim(str(raw)))
        if value is None or not self._in_range(value):
            raise ConfigError(self.error(raw))
        return value

    def _in_range(self, value) -> bool:
        if self.low is not None and (value < self.low or (self.low_open and value == self.low)):
            return False
        if self.high is not None and (value > self.high or (self.high_open and value == self.high)):
            return False
        return True


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")  # json.loads would read NaN and Infinity; Jackson refuses them


def java_trim(text: str) -> str:
    """``text`` without the characters Java's ``String.trim`` removes (every one up to a space)."""
    return text.strip(_JAVA_BLANKS)


def _parse_kind(key: Key, text: str):
    """Return the parsed value, or ``None`` when ``text`` does not parse (as the JVM parses it)."""
    kind, lower = key.kind, text.lower()
    if kind == "bool":
        return {"true": True, "false": False}.get(lower)
    if kind == "int":  # Long.parseLong
        return _long(int(text)) if _INT.fullmatch(text) else None
    if kind == "double":
        return float(text) if _DOUBLE.fullmatch(text) else None
    if kind == "size":  # JavaUtils.byteStringAsBytes: a long count, refused when the bytes overflow a long
        m = _SIZE.fullmatch(lower)
        if not m or m.group(2) not in _SIZE_UNITS or _long(int(m.group(1))) is None:
            return None
        return _long(int(m.group(1)) * _SIZE_UNITS[m.group(2)])
    if kind == "duration":  # JavaUtils.timeStringAsMs: a long count, converted as TimeUnit does (saturating)
        m = _DURATION.fullmatch(lower)
        if not m or (m.group(2) not in _DURATION_MS and m.group(2) != "us"):
            return None
        n = _long(int(m.group(1)))
        if n is None:
            return None
        if m.group(2) == "us":
            return n // 1000 if n >= 0 else -(-n // 1000)  # truncated toward zero
        return min(max(n * _DURATION_MS[m.group(2)], _LONG_MIN), _LONG_MAX)
    if kind == "enum":
        return lower if lower in key.options else None
    return text or None


def _long(n: int) -> int | None:
    """``n`` if it fits a Java ``long``, else ``None``."""
    return n if _LONG_MIN <= n <= _LONG_MAX else None


def _edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions)."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j - 1] + (ca != cb), previous[j] + 1, current[j - 1] + 1))
        previous = current
    return previous[-1]


def _format_number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _format_size(n: float) -> str:
    for unit, factor in (("g", 1 << 30), ("m", 1 << 20), ("k", 1 << 10)):
        if n >= factor and n % factor == 0:
            return f"{int(n // factor)}{unit}"
    return _format_number(n)


def _format_duration(ms: float) -> str:
    for unit, factor in (("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms >= factor and ms % factor == 0:
            return f"{int(ms // factor)}{unit}"
    return f"{_format_number(ms)}ms"


@dataclass(frozen=True)
class Rule:
    """A rule between keys: while ``when`` is ``when_value``, ``key`` must (not) have a value.

    Parameters
    ----------
    when, when_value : str
        The switch, e.g. ``spark.riffle.enabled`` and ``true``.
    key : str
        The key the rule constrains (ours or Spark's).
    unset : str
        ``key``'s value when it is not set (Spark's or our default).
    must, must_not : str, optional
        The value ``key`` needs, or the one it cannot have (compared case-insensitively).
    why : str
        The reason and the fix, appended to the message.
    """

    when: str
    when_value: str
    key: str
    unset: str
    must: str | None = None
    must_not: str | None = None
    why: str = ""

    def violation(self, conf: Mapping[str, str], defaults: Mapping[str, str | None]) -> str | None:
        """The message when ``conf`` breaks this rule, else None."""
        switch = conf.get(self.when, defaults.get(self.when))
        if switch is None or java_trim(switch).lower() != self.when_value:
            return None
        actual = java_trim(conf.get(self.key, self.unset))
        if self.must is not None and actual.lower() != self.must.lower():
            return (f"{self.when}={self.when_value} needs {self.key}={self.must}, but {self.key} is "
                    f"'{printable(actual)}'. {self.why}")
        if self.must_not is not None and actual.lower() == self.must_not.lower():
            return f"{self.when}={self.when_value} cannot run with {self.key}={printable(actual)}. {self.why}"
        return None


class KeyTable:
    """The declared keys and the rules between them, with whole-configuration validation."""

    def __init__(self, keys, rules=()):
        self.keys = {k.name: k for k in keys}
        self.rules = tuple(rules)
        if len(self.keys) != len(keys):
            raise ValueError("duplicate configuration key in the table")

    def __getitem__(self, name: str) -> Key:
        return self.keys[name]

    def default(self, name: str):
        """The parsed default of key ``name`` (None when it has none), for CLIs and helpers."""
        key = self.keys[name]
        return None if key.default is None else key.parse(key.default)

    def job_settings(self) -> dict:
        """Per-job keys by their argument name, e.g. ``{"fan_in": "spark.riffle.merge.fanIn"}``."""
        return {k.job_setting: k.name for k in self if k.job_setting}

    def __iter__(self):
        return iter(sorted(self.keys.values(), key=lambda k: k.name))

    def unknown_key_error(self, name: str) -> str:
        """The message for a key in our namespaces that the table does not declare.

        It suggests the declared key nearest in edit distance when that is at most
        max(2, len/5) edits away: the same rule as the JVM validator, so both
        report the same words.
        """
        best = self._nearest(name)
        hint = f" Did you mean {best}?" if best else ""
        return (f"{printable(name)} is not a sparkrm configuration key.{hint} "
                f"Remove it, or see docs/configuration.md.")

    def _nearest(self, name: str) -> str | None:
        """The declared key nearest to ``name``, if it is at most max(2, len/5) edits away."""
        best = min(self.keys, key=lambda k: (_edit_distance(name, k), k))
        return best if _edit_distance(name, best) <= max(2, len(best) // 5) else None

    def near_miss_error(self, name: str) -> str | None:
        """The message for a key whose namespace is a typo of ours (``spark.rifle.*``), else None.

        Only a key that, with the namespace corrected, is near a declared key counts,
        so Spark's own namespaces (``spark.sql.*`` is two edits from ``spark.slaq.*``)
        never do.
        """
        parts = name.split(".", 2)
        if len(parts) < 3 or parts[0] != "spark" or name.startswith(NAMESPACES):
            return None
        for namespace in NAMESPACES:
            segment = namespace.split(".")[1]
            if 0 < _edit_distance(parts[1], segment) <= 2:
                best = self._nearest(f"spark.{segment}.{parts[2]}")
                if best:
                    return (f"{printable(name)} is not a sparkrm configuration key (spark.{printable(parts[1])} "
                            f"is not a sparkrm namespace). Did you mean {best}? Fix the name, or remove it.")
        return None

    def validate(self, conf: Mapping[str, str], *, files: bool = True) -> dict:
        """Validate every key of ``conf`` in our namespaces.

        Parameters
        ----------
        conf : mapping of str to str
            Spark configuration; keys outside :data:`NAMESPACES` are ignored.
        files : bool, default=True
            Also check the file each ``file`` key names (:meth:`Key.file_problem`), as the
            driver plugin does at start-up. Skipped when
            ``spark.submit.deployMode`` is ``cluster``: that driver runs on another machine.

        Returns
        -------
        dict
            Every declared key mapped to its parsed value (defaults filled in;
            keys without a default and without a value map to ``None``).

        Raises
        ------
        ConfigError
            Listing every unknown key, bad value and broken rule, one per line.
        """
        problems, values = [], {}
        for name in sorted(conf):
            if name.startswith(NAMESPACES) and name not in self.keys:
                problems.append(self.unknown_key_error(name))
            elif (near := self.near_miss_error(name)) is not None:
                problems.append(near)
        for key in self:
            raw = conf.get(key.name, key.default)
            try:
                values[key.name] = None if raw is None else key.parse(raw)
            except ConfigError as e:
                problems.append(str(e))
        defaults = {k.name: k.default for k in self}
        problems += [v for rule in self.rules if (v := rule.violation(conf, defaults)) is not None]
        if files and java_trim(conf.get("spark.submit.deployMode", "client")).lower() != "cluster":
            problems += [p for key in self if key.kind == "file" and values.get(key.name) is not None
                         and (p := key.file_problem(values[key.name]))]
        if problems:
            raise ConfigError("\n".join(problems))
        return values

    def to_json(self) -> str:
        """Serialise keys and rules for the JVM validator (see ``SparkrmConf.java``)."""
        return json.dumps({"namespaces": list(NAMESPACES), "jobPrefix": JOB_PREFIX, "keys": [{
            "name": k.name, "kind": k.kind, "default": k.default,
            "low": k.low, "high": k.high, "lowOpen": k.low_open, "highOpen": k.high_open,
            "options": list(k.options), "expected": k.expected(), "fix": k.fix(), "perJob": bool(k.job_setting),
        } for k in self], "rules": [{
            "when": r.when, "whenValue": r.when_value, "key": r.key, "unset": r.unset,
            "must": r.must, "mustNot": r.must_not, "why": r.why,
        } for r in self.rules]}, indent=1)
