"""Figures quoted in README.md and docs/*.md, checked against the recorded results they name.

A figure is annotated by an HTML comment on its own line right after the paragraph, list item or
table that quotes it (no blank line between; several may follow one another), invisible on GitHub::

    ... a whole job takes 0.26x of vanilla's time ...
    <!-- figures: benchmarks/results/riffle/2026-11-25-3c70c11.whole-job-200iops.json summary.job_s_ratio.geomean=0.26x -->

After ``figures:`` comes one result file (a JSON under ``benchmarks/results/``) and one or more
``FIELD=QUOTED`` pairs.

FIELD is a path into the JSON: keys and list indexes separated by dots, a key holding dots, spaces
or ``=`` written in double quotes (``summary."N=10 best-effort".reads_per_reducer``); or the ratio
of two such paths, ``A/B``. Its value must be a number.

QUOTED is the figure exactly as the text shows it, which must appear in the block above: a number
with the digits shown (``10,000`` may keep its thousands commas), optionally followed by ``%`` (the
field holds a fraction: 0.091 is quoted ``9.1%``) or ``x`` (a ratio, quoted as is). The figure
matches when the recorded value, times 100 for ``%``, rounds to the quoted number at the quoted
number of decimals (a tie may round either way). A quoted ``10.1%`` is also found as the low end of
a range written ``10.1-10.3%``.

``python -m benchmarks.quoted_figures`` prints one line per figure that does not match;
``tests/test_quoted_figures.py`` runs the same check.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent

#: The documents whose annotations are checked, relative to the project.
DOCUMENTS = ("README.md", "docs/*.md")

_ANNOTATION_START = re.compile(r"<!--\s*figures?\b", re.IGNORECASE)
_PREFIX = "<!-- figures: "
_TOKEN = re.compile(r'(?:"[^"]*"|[^\s"])+')
_SEGMENT = re.compile(r'"([^"]*)"|([^".]+)')
_QUOTED = re.compile(r"^(-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?)([%x]?)$")
_FENCE = re.compile(r"^\s*(```|~~~)")


class AnnotationError(ValueError):
    """A figures annotation that does not follow the format in this module's docstring."""


@dataclass(frozen=True)
class Figure:
    """One ``FIELD=QUOTED`` pair: the field's path(s) and the figure as the text quotes it."""

    field: str
    paths: tuple[tuple[str, ...], ...]  # one path, or numerator and denominator of a ratio
    quoted: str
    number: float
    decimals: int
    unit: str  # "", "%" or "x"


@dataclass(frozen=True)
class Annotation:
    """A parsed annotation: where it is, the result it names, its figures and the text it follows."""

    doc: str
    line: int
    result: str
    figures: tuple[Figure, ...]
    block: str


def parse_path(text: str) -> tuple[str, ...]:
    """Split a field path into its keys: ``a."b.c".0`` gives ``("a", "b.c", "0")``."""
    if not text:
        raise AnnotationError("empty field path")
    keys, pos = [], 0
    while True:
        m = _SEGMENT.match(text, pos)
        if not m or m.group(0) == '""':
            raise AnnotationError(f"field path {text!r}: expected a key at character {pos + 1}")
        keys.append(m.group(1) if m.group(1) is not None else m.group(2))
        pos = m.end()
        if pos == len(text):
            return tuple(keys)
        if text[pos] != ".":
            raise AnnotationError(f"field path {text!r}: expected '.' at character {pos + 1}")
        pos += 1


def parse_figure(token: str) -> Figure:
    """Parse one ``FIELD=QUOTED`` pair."""
    field, sep, quoted = token.rpartition("=")
    if not sep or not field:
        raise AnnotationError(f"{token!r} is not FIELD=QUOTED")
    m = _QUOTED.match(quoted)
    if not m:
        raise AnnotationError(f"{token!r}: quoted figure {quoted!r} is not a number, optionally followed "
                              f"by % or x")
    parts = re.split(r'/(?=(?:[^"]*"[^"]*")*[^"]*$)', field)
    if len(parts) > 2:
        raise AnnotationError(f"{token!r}: a field is one path or the ratio of two (A/B)")
    paths = tuple(parse_path(p) for p in parts)
    return Figure(field=field, paths=paths, quoted=quoted, number=float(m.group(1).replace(",", "")),
                  decimals=len(m.group(2) or ""), unit=m.group(3))


def parse_annotation(line: str) -> tuple[str, tuple[Figure, ...]]:
    """Parse an annotation line into the result file it names and its figures."""
    text = line.strip()
    if not text.startswith(_PREFIX):
        raise AnnotationError(f"an annotation starts with {_PREFIX.strip()!r} (one space each side of "
                              f"'figures:'), got {text[:24]!r}")
    if not text.endswith("-->"):
        raise AnnotationError("an annotation ends with '-->' on the same line")
    body = text[len(_PREFIX):-3].strip()
    if "--" in body:
        raise AnnotationError("'--' may not appear inside an HTML comment")
    tokens = _TOKEN.findall(body)
    if _TOKEN.sub("", body).strip():
        raise AnnotationError(f"unbalanced double quote in {body!r}")
    if not tokens:
        raise AnnotationError("no result file and no figures")
    result, pairs = tokens[0], tokens[1:]
    if "=" in result or not result.startswith("benchmarks/results/") or not result.endswith(".json") \
            or ".." in Path(result).parts:
        raise AnnotationError(f"the first word names the result file, a .json under benchmarks/results/, "
                              f"got {result!r}")
    if not pairs:
        raise AnnotationError(f"no FIELD=QUOTED figures after {result}")
    return result, tuple(parse_figure(p) for p in pairs)


def find_annotations(doc: Path, root: Path = PROJECT_DIR) -> tuple[list[Annotation], list[str]]:
    """The annotations of one document, and one problem line for each malformed one."""
    name = doc.relative_to(root).as_posix()
    lines = doc.read_text(encoding="utf-8").splitlines()
    found, problems, fenced = [], [], False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
        if fenced or not _ANNOTATION_START.match(line.lstrip()):
            continue
        try:
            result, figures = parse_annotation(line)
        except AnnotationError as e:
            problems.append(f"{name}:{i + 1}: malformed figures annotation: {e}")
            continue
        j = i - 1
        while j >= 0 and _ANNOTATION_START.match(lines[j].lstrip()):
            j -= 1
        block = []
        while j >= 0 and lines[j].strip():
            block.insert(0, lines[j])
            j -= 1
        if not block:
            problems.append(f"{name}:{i + 1}: figures annotation follows a blank line: put it right after "
                            f"the text that quotes the figures")
            continue
        found.append(Annotation(name, i + 1, result, figures, "\n".join(block)))
    return found, problems


def _lookup(data, path: tuple[str, ...], result: str):
    node = data
    for depth, key in enumerate(path):
        where = ".".join(path[:depth]) or "the top level"
        if isinstance(node, dict):
            if key not in node:
                raise KeyError(f"no key {key!r} under {where} of {result} (keys: {', '.join(map(str, node))})")
            node = node[key]
        elif isinstance(node, list):
            if not key.isdigit() or int(key) >= len(node):
                raise KeyError(f"{where} of {result} is a list of {len(node)}: {key!r} is no index in it")
            node = node[int(key)]
        else:
            raise KeyError(f"{where} of {result} is {node!r}, not an object or list")
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        raise KeyError(f"{'.'.join(path)} in {result} is {node!r}, not a number")
    return float(node)


def recorded_value(figure: Figure, data, result: str) -> float:
    """The figure's recorded value: its field, or the ratio of its two fields."""
    values = [_lookup(data, p, result) for p in figure.paths]
    return values[0] if len(values) == 1 else values[0] / values[1]


def matches(figure: Figure, value: float) -> bool:
    """Whether the recorded value, scaled for %, rounds to the quoted number at its decimals."""
    scaled = value * 100 if figure.unit == "%" else value
    return abs(scaled - figure.number) <= 0.5 * 10 ** -figure.decimals * (1 + 1e-9) + 1e-12


def appears(figure: Figure, text: str) -> bool:
    """Whether the quoted figure appears in the text (a % or x figure also as a range's low end)."""
    number = re.escape(figure.quoted[:len(figure.quoted) - len(figure.unit)])
    unit = re.escape(figure.unit)
    after = rf"(?:{unit}|[-–]\d[\d.,]*{unit})" if unit else r"(?!\d|[.,]\d)"
    return re.search(rf"(?<![\d.,]){number}{after}", text) is not None


def check(annotation: Annotation, root: Path = PROJECT_DIR) -> list[str]:
    """One problem line per figure of the annotation that is missing from its text or its result."""
    where = f"{annotation.doc}:{annotation.line}"
    path = root / annotation.result
    if not path.is_file():
        return [f"{where}: result file {annotation.result} does not exist"]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        return [f"{where}: result file {annotation.result} is not JSON: {e}"]
    problems = []
    for figure in annotation.figures:
        if not appears(figure, annotation.block):
            problems.append(f"{where}: {figure.field}: quoted {figure.quoted} does not appear in the text "
                            f"above the annotation")
            continue
        try:
            value = recorded_value(figure, data, annotation.result)
        except KeyError as e:
            problems.append(f"{where}: {figure.field}: {e.args[0]}")
            continue
        except ZeroDivisionError:
            problems.append(f"{where}: {figure.field}: the ratio's denominator is 0 in {annotation.result}")
            continue
        if not matches(figure, value):
            shown = f"{value * 100:.6g}%" if figure.unit == "%" else f"{value:.6g}{figure.unit}"
            problems.append(f"{where}: {figure.field}: quoted {figure.quoted}, recorded {shown} "
                            f"in {annotation.result}")
    return problems


def documents(root: Path = PROJECT_DIR) -> list[Path]:
    """The documents whose figures are checked."""
    return sorted({p for pattern in DOCUMENTS for p in root.glob(pattern) if p.is_file()})


def check_document(doc: Path, root: Path = PROJECT_DIR) -> tuple[int, list[str]]:
    """Check every annotation of one document: the number of figures checked, and the problems."""
    found, problems = find_annotations(doc, root)
    for annotation in found:
        problems += check(annotation, root)
    return sum(len(a.figures) for a in found), problems


def main(argv=None) -> int:
    """Check every document's quoted figures; print one line per problem."""
    total, problems = 0, []
    for doc in documents():
        n, p = check_document(doc)
        total, problems = total + n, problems + p
    for line in problems:
        print(line)
    print(f"{total} quoted figures checked, {len(problems)} problems", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
