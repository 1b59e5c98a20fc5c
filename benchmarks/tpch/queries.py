"""The 22 TPC-H queries: loading, selection and the columns each result is ordered by.

The SQL files (``queries/qNN.sql``) use the specification's validation
substitution parameters. Q11's ``FRACTION`` scales with the data
(0.0001 / SF), written ``${SF}`` in the file and substituted here.
"""

from __future__ import annotations

import re
from pathlib import Path

QUERY_DIR = Path(__file__).resolve().parent / "queries"
ALL_QUERIES = tuple(range(1, 23))
_ORDER_BY = re.compile(r"\border\s+by\s+(.+?)(?:\blimit\s+\d+)?\s*;?\s*$", re.IGNORECASE | re.DOTALL)


class QuerySelectionError(ValueError):
    """A --queries selection names no valid TPC-H query."""


def parse_selection(text: str) -> list[int]:
    """Parse ``"1-22"``, ``"1,3,5-7"`` or ``"6"`` into sorted query numbers.

    Raises
    ------
    QuerySelectionError
        For anything outside 1..22, a reversed range (``5-3``) or unparsable.
    """
    chosen = set()
    parts = [part.strip().lower().lstrip("q") for part in str(text).split(",")]
    for i, part in enumerate(parts):
        m = re.fullmatch(r"(\d+)(?:-q?(\d+))?", part)
        if not m:
            raise QuerySelectionError(f"Cannot read query selection {text!r}: use e.g. 1-22, 1,3,5-7 or 6.")
        low, high = int(m.group(1)), int(m.group(2) or m.group(1))
        if min(low, high) < 1 or max(low, high) > 22:
            raise QuerySelectionError(f"TPC-H has queries 1 to 22; {part!r} in {text!r} is outside them.")
        if low > high:
            fixed = ",".join(parts[:i] + [f"{high}-{low}"] + parts[i + 1:])
            raise QuerySelectionError(f"--queries {text} is reversed: write {fixed}.")
        chosen.update(range(low, high + 1))
    return sorted(chosen)


def query_text(number: int, sf: float) -> str:
    """The SQL of query ``number`` for scale factor ``sf``, without comments."""
    raw = (QUERY_DIR / f"q{number:02d}.sql").read_text()
    body = "\n".join(line for line in raw.splitlines() if not line.lstrip().startswith("--"))
    return body.replace("${SF}", repr(float(sf))).strip()


def order_columns(sql: str) -> list[str]:
    """Names of the result columns of the outermost ORDER BY, in order; [] when unordered.

    In the TPC-H queries only the outermost SELECT has an ORDER BY, and its
    items are result column names, optionally followed by ``asc``/``desc``.
    """
    m = _ORDER_BY.search(sql)
    if not m:
        return []
    return [re.sub(r"\s+(asc|desc)$", "", item.strip(), flags=re.IGNORECASE)
            for item in m.group(1).split(",")]
