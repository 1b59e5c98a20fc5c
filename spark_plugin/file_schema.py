"""Checking a file that a configuration key names, before anything uses it, as the JVM checks it.

A key of kind ``file`` (see :class:`spark_plugin.config.Key`) names a file on the driver. It must
exist and be readable; when its name ends in ``.json`` and the key has a schema, the file must also
match that schema. A schema is a small JSON document under ``spark_plugin/jvm/resources/`` that the
jar carries too: this module and ``dev.sparkrm.conf.FileSchema`` read the same document, walk a file
the same way and report its first problem in the same words, so a file Python accepts is a file the
driver plugin accepts. Every problem is one line naming the key, the file, the field and the fix.

The schema language has seven types, each a JSON object with a ``type``:

* ``object`` with ``fields``: exactly these fields, each required, checked in the order given;
* ``map`` with ``values``: any field names, every value matching ``values``;
* ``const`` with ``value``: that string;
* ``names``: a non-empty array of non-empty strings;
* ``numbers``: an array of finite numbers with as many entries as the root field named by ``length``
  (``"nulls": true`` also allows null);
* ``number``: a finite number;
* ``pairs``: a non-empty array of two-number arrays.

``{"ref": name}`` stands for ``definitions[name]``.
"""

from __future__ import annotations

import json
import math
import stat
from pathlib import Path

from .errors import printable

__all__ = ["RESOURCES", "check_document", "file_problem", "load_schema", "printable"]

#: Where schemas live in the source tree and the installed package (the jar build packs this folder).
RESOURCES = Path(__file__).resolve().parent / "jvm" / "resources"

_ROOT = "the file"


def load_schema(resource: str) -> dict:
    """The schema stored at ``resource`` (a path under :data:`RESOURCES`, as in the jar)."""
    return json.loads((RESOURCES / resource).read_text(encoding="utf-8"))


def file_problem(key: str, value: str, *, schema: str | None, fix: str) -> str | None:
    """The one-line message when ``value`` of ``key`` does not name a usable file, else ``None``.

    Parameters
    ----------
    key : str
        The configuration key, for the message.
    value : str
        The path, relative to the current directory unless absolute.
    schema : str or None
        Resource of the schema a ``.json`` file must match; ``None`` checks existence only.
    fix : str
        The sentence that ends every message (how to make a good file).
    """
    where = f"{key}={printable(value)}"
    path = Path(value)
    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):  # missing, a missing or non-folder parent, a NUL in the name
        return f"{where}: no such file. {fix}"
    if stat.S_ISDIR(mode):
        return f"{where} is a directory, not a file. {fix}"
    if not stat.S_ISREG(mode):
        return f"{where} is not a regular file. {fix}"
    try:
        with path.open("rb") as f:
            data = f.read() if schema is not None and value.endswith(".json") else b""
    except PermissionError:
        return f"{where} cannot be read (permission denied). {fix}"
    except OSError as e:
        return f"{where} cannot be read ({printable(e.strerror or str(e))}). {fix}"
    if schema is None or not value.endswith(".json"):
        return None
    spec = load_schema(schema)
    try:
        document = json.loads(data.decode("utf-8-sig"), parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as e:  # JSONDecodeError, UnicodeDecodeError, too long an integer
        return f"{where} cannot be read as JSON ({printable(str(e) or type(e).__name__)}). {fix}"
    problem = check_document(document, spec)
    return None if problem is None else f"{where} is not a valid {spec['title']}: {problem}. {fix}"


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def check_document(document, schema: dict) -> str | None:
    """The first problem of a parsed JSON ``document`` against ``schema``, e.g.
    ``"scaler.scale must be an array of 3 numbers or nulls (one per entry of features); got a string"``."""
    return _Walk(schema, document).check(document, schema["root"], "")


class _Walk:
    """One walk over a document; ``root`` resolves the ``length`` of ``numbers``."""

    def __init__(self, schema: dict, root):
        self.definitions = schema.get("definitions", {})
        self.root = root

    def resolve(self, spec: dict) -> dict:
        return self.definitions[spec["ref"]] if "ref" in spec else spec

    def expected(self, spec: dict) -> str:
        spec = self.resolve(spec)
        kind = spec["type"]
        if kind == "object":
            return "an object with the fields " + ", ".join(spec["fields"])
        if kind == "map":
            return "an object whose every value is " + self.expected(spec["values"])
        if kind == "const":
            return f'"{spec["value"]}"'
        if kind == "names":
            return "a non-empty array of non-empty strings"
        if kind == "numbers":
            of = self.root.get(spec["length"]) if isinstance(self.root, dict) else None
            n = len(of) if isinstance(of, list) else 0
            nulls = " or nulls" if spec.get("nulls") else ""
            return f"an array of {n} number{'' if n == 1 else 's'}{nulls} (one per entry of {spec['length']})"
        if kind == "number":
            return "a number"
        if kind == "pairs":
            return "a non-empty array of [a, b] pairs of numbers"
        raise ValueError(f"unknown schema type {kind!r}")

    def check(self, node, spec: dict, path: str) -> str | None:
        spec = self.resolve(spec)
        kind, shown = spec["type"], path or _ROOT
        wrong = f"{shown} must be {self.expected(spec)}; got {describe(node)}"
        if kind == "object":
            if not isinstance(node, dict):
                return wrong
            fields = spec["fields"]
            for name in node:
                if name not in fields:
                    return (f"{_join(path, name)} is not a field of {shown}; its fields are "
                            f"{', '.join(fields)}")
            for name, sub in fields.items():
                if name not in node:
                    return f"{_join(path, name)} is missing; it must be {self.expected(sub)}"
                problem = self.check(node[name], sub, _join(path, name))
                if problem is not None:
                    return problem
            return None
        if kind == "map":
            if not isinstance(node, dict):
                return wrong
            for name, value in node.items():
                problem = self.check(value, spec["values"], _join(path, name))
                if problem is not None:
                    return problem
            return None
        if kind == "const":
            return None if node == spec["value"] else wrong
        if kind == "names":
            if not isinstance(node, list) or not node:
                return wrong
            for i, item in enumerate(node):
                if not isinstance(item, str) or not item:
                    return f"{shown}[{i}] must be a non-empty string; got {describe(item)}"
            return None
        if kind == "numbers":
            length = self.root.get(spec["length"]) if isinstance(self.root, dict) else None
            if not isinstance(node, list) or not isinstance(length, list) or len(node) != len(length):
                return wrong
            for i, item in enumerate(node):
                if not (_finite(item) or (item is None and spec.get("nulls"))):
                    expected = "a number or null" if spec.get("nulls") else "a number"
                    return f"{shown}[{i}] must be {expected}; got {describe(item)}"
            return None
        if kind == "number":
            return None if _finite(node) else wrong
        if kind == "pairs":
            if not isinstance(node, list) or not node:
                return wrong
            for i, pair in enumerate(node):
                if not isinstance(pair, list) or len(pair) != 2:
                    return f"{shown}[{i}] must be an array of 2 numbers; got {describe(pair)}"
                for j, item in enumerate(pair):
                    if not _finite(item):
                        return f"{shown}[{i}][{j}] must be a number; got {describe(item)}"
            return None
        raise ValueError(f"unknown schema type {kind!r}")


def _join(path: str, name: str) -> str:
    name = printable(name)
    return f"{path}.{name}" if path else name


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _finite(value) -> bool:
    if not _number(value):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an integer beyond a double's range
        return False


def describe(node) -> str:
    """What a JSON value is, in the words of every message: ``null``, ``a string``, ``an array of 2 entries``..."""
    if node is None:
        return "null"
    if isinstance(node, bool):
        return "true" if node else "false"
    if isinstance(node, str):
        return "a string" if node else "an empty string"
    if _number(node):
        return "a number" if _finite(node) else "a number out of range"
    if isinstance(node, list):
        return f"an array of {len(node)} {'entry' if len(node) == 1 else 'entries'}"
    return "an object"
