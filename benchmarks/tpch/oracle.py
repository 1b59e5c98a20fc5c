"""The correctness oracle: DuckDB runs the same SQL over the same Parquet files.

DuckDB is an independent engine, so agreement with it is evidence that Spark
(with or without sparkrm's features) computed the right answer. Values are
compared strictly:

* two decimals of the same scale (money sums, at least to the cent) must be
  equal; of different scales, equal within half a unit of the coarser scale,
  which is how far rounding to that scale may move a value (Spark's decimal
  ``avg`` keeps 6 digits, DuckDB more);
* a decimal against a float (DuckDB's ``avg`` is a double), within 1e-6
  relative or half a unit of the decimal's last digit, whichever is larger;
* floats within 1e-6 relative; integers, strings and dates exactly;
* rows in the query's order where it has an ORDER BY (rows tied on the ordering
  columns may come in any order).
"""

from __future__ import annotations

import datetime
import math
from decimal import Decimal
from pathlib import Path

from .data import table_paths

REL_TOL = 1e-6


class ResultMismatch(AssertionError):
    """Spark's result differs from DuckDB's; the message shows the first differing rows."""


class DuckDBOracle:
    """Expected answers from DuckDB over a TPC-H data set folder (computed once per query)."""

    def __init__(self, dataset: Path):
        import duckdb

        self._con = duckdb.connect()
        for table, folder in table_paths(dataset).items():
            self._con.execute(f"create view {table} as select * from read_parquet('{folder}/*.parquet')")
        self._answers: dict[str, tuple[list[str], list[tuple]]] = {}

    def answer(self, sql: str) -> tuple[list[str], list[tuple]]:
        """Column names and rows of ``sql``."""
        if sql not in self._answers:
            cursor = self._con.execute(sql)
            self._answers[sql] = ([d[0] for d in cursor.description], cursor.fetchall())
        return self._answers[sql]


def values_equal(a, b) -> bool:
    """Equality as the oracle defines it (see the module docstring)."""
    if a is None or b is None:
        return a is None and b is None
    numbers = (int, float, Decimal)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool):
        decimals = [x for x in (a, b) if isinstance(x, Decimal)]
        if len(decimals) == 2:
            return abs(a - b) <= _half_unit(min(_scale(a), _scale(b)))
        if isinstance(a, float) or isinstance(b, float):
            slack = max(_half_unit(_scale(decimals[0])), Decimal(0)) if decimals else Decimal(0)
            return math.isclose(float(a), float(b), rel_tol=REL_TOL, abs_tol=float(slack) + 1e-12)
        return a == b
    if isinstance(a, datetime.date) and isinstance(b, datetime.date):
        return a == b
    return str(a) == str(b)


def _scale(d: Decimal) -> int:
    exponent = d.as_tuple().exponent
    return -exponent if isinstance(exponent, int) else 0


def _half_unit(scale: int) -> Decimal:
    """Half a unit in the last place of a decimal with ``scale`` digits after the point."""
    return Decimal(5).scaleb(-scale - 1)


def _sort_key(row) -> tuple:
    """A total order on rows made of mixed types, insensitive to representation noise."""
    def one(v):
        if v is None:
            return (0, "")
        if isinstance(v, (int, float, Decimal)):
            return (1, float(f"{float(v):.9g}"))
        return (2, str(v))

    return tuple(one(v) for v in row)


def canonical_order(rows: list[tuple], key_idx: list[int]) -> list[tuple]:
    """Keep the order of runs of equal ordering keys; sort rows within each run (or all, if unordered)."""
    if not key_idx:
        return sorted(rows, key=_sort_key)
    runs, out = [], []
    for row in rows:
        key = _sort_key([row[i] for i in key_idx])
        if runs and runs[-1][0] == key:
            runs[-1][1].append(row)
        else:
            runs.append((key, [row]))
    for _, run in runs:
        out += sorted(run, key=_sort_key)
    return out


def compare(columns: list[str], actual: list[tuple], expected: list[tuple], order_by: list[str],
            *, max_rows: int = 5) -> None:
    """Raise :class:`ResultMismatch` when ``actual`` (Spark) differs from ``expected`` (DuckDB).

    Parameters
    ----------
    columns : list of str
        Result column names (Spark's).
    order_by : list of str
        Columns of the query's ORDER BY; rows must follow that order.
    """
    if len(actual) != len(expected):
        raise ResultMismatch(f"Spark returned {len(actual)} rows, DuckDB {len(expected)}.\n"
                             + _diff(columns, actual[:max_rows], expected[:max_rows]))
    key_idx = [columns.index(c) for c in order_by if c in columns]
    if len(key_idx) != len(order_by):
        key_idx = list(range(len(columns)))  # ordered by an expression: compare in exact order
    a_rows, e_rows = canonical_order(actual, key_idx), canonical_order(expected, key_idx)
    bad = [i for i, (a, e) in enumerate(zip(a_rows, e_rows))
           if len(a) != len(e) or not all(values_equal(x, y) for x, y in zip(a, e))]
    if bad:
        first = bad[:max_rows]
        raise ResultMismatch(f"{len(bad)} of {len(actual)} rows differ; first at row {bad[0]}.\n"
                             + _diff(columns, [a_rows[i] for i in first], [e_rows[i] for i in first], first))


def _diff(columns, actual, expected, positions=None) -> str:
    lines = ["columns: " + ", ".join(columns)]
    for n, (a, e) in enumerate(zip(actual, expected)):
        where = positions[n] if positions else n
        lines.append(f"  row {where}: spark  {tuple(a)}")
        lines.append(f"  row {where}: duckdb {tuple(e)}")
    return "\n".join(lines)
