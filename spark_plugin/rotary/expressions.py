"""Arithmetic over aggregate totals: the output columns a progressive query derives from its sums.

A query spec says, for instance, ``avg_qty = sum_qty / count_order``. The same expression is
evaluated on exact totals (Python ``Decimal``/``int`` values, so the final answer is exact to the
cent) and on float totals (for the delta-method confidence interval). Only names, numbers,
``+ - * /`` and parentheses are accepted: specs are data, never code. A spec derived from a plain query
(:mod:`.rewrite`) also uses ``sqrt(...)`` (STDDEV) and, for HAVING, comparisons, ``and``/``or``/``not``,
``is None`` and string constants, evaluated row by row with SQL's NULL logic (:meth:`Expression.test`).
"""

from __future__ import annotations

import ast
import math
import operator
from decimal import Decimal

import numpy as np
import pandas as pd

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge}
_FUNCTIONS = {"sqrt"}


class Expression:
    """A parsed arithmetic expression over named columns."""

    def __init__(self, text: str):
        self.text = text.strip()
        try:
            self._tree = ast.parse(self.text, mode="eval").body
        except SyntaxError as e:
            raise ValueError(f"not an arithmetic expression: {self.text!r} ({e.msg})") from None
        self.names = sorted(self._check(self._tree))

    def _check(self, node) -> set[str]:
        if isinstance(node, ast.Name):
            return {node.id}
        if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (int, float, str))):
            return set()
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return self._check(node.left) | self._check(node.right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
            return self._check(node.operand)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS \
                and len(node.args) == 1 and not node.keywords:
            return self._check(node.args[0])
        if isinstance(node, ast.BoolOp):
            return set().union(*(self._check(v) for v in node.values))
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and (
                type(node.ops[0]) in _COMPARE or isinstance(node.ops[0], (ast.Is, ast.IsNot))):
            return self._check(node.left) | self._check(node.comparators[0])
        raise ValueError(f"{self.text!r}: only column names, numbers, + - * / and parentheses are allowed")

    def evaluate(self, columns, exact: bool = False):
        """The value over ``columns`` (a mapping of name to scalar, array or Series).

        With ``exact``, numbers are Decimals so that Decimal columns stay exact.
        """
        return self._eval(self._tree, columns, exact)

    def _eval(self, node, columns, exact):
        if isinstance(node, ast.Name):
            return columns[node.id]
        if isinstance(node, ast.Constant):
            return Decimal(str(node.value)) if exact else float(node.value)
        if isinstance(node, ast.UnaryOp):
            return -self._eval(node.operand, columns, exact)
        if isinstance(node, ast.Call):
            return _sqrt(self._eval(node.args[0], columns, exact))
        left, right = self._eval(node.left, columns, exact), self._eval(node.right, columns, exact)
        if exact and isinstance(node.op, ast.Div):
            return _divide_exactly(left, right)
        return _BINARY[type(node.op)](left, right)

    def test(self, row) -> bool | None:
        """The value of a predicate over one row (a mapping of name to scalar), with SQL's three-valued logic:
        None (NULL) where an operand is NULL; a filter keeps the row only when this is True."""
        return self._scalar(self._tree, row)

    def _scalar(self, node, row):
        if isinstance(node, ast.Name):
            value = row[node.id]
            return None if _null(value) else value
        if isinstance(node, ast.Constant):
            return Decimal(str(node.value)) if isinstance(node.value, float) else node.value
        if isinstance(node, ast.BoolOp):
            values = [self._scalar(v, row) for v in node.values]
            if isinstance(node.op, ast.And):
                return False if False in values else (None if None in values else True)
            return True if True in values else (None if None in values else False)
        if isinstance(node, ast.UnaryOp):
            value = self._scalar(node.operand, row)
            if value is None:
                return None
            return (not value) if isinstance(node.op, ast.Not) else -value
        if isinstance(node, ast.Compare):
            left, right = self._scalar(node.left, row), self._scalar(node.comparators[0], row)
            op = node.ops[0]
            if isinstance(op, (ast.Is, ast.IsNot)):
                return (left is None) == isinstance(op, ast.Is)
            if left is None or right is None:
                return None
            return _COMPARE[type(op)](*_comparable(left, right))
        if isinstance(node, ast.Call):
            value = self._scalar(node.args[0], row)
            return None if value is None else _sqrt(value)
        left, right = self._scalar(node.left, row), self._scalar(node.right, row)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Div) and right == 0:
            return None
        return _BINARY[type(node.op)](*_comparable(left, right))

    def test_all(self, columns, length: int) -> np.ndarray:
        """:meth:`test` over whole columns at once (a mapping of name to a sequence of ``length`` values, or
        to one scalar for every row): a bool array, True where the predicate is True (NULL counts as False,
        as a filter drops it). The same NULL logic and number comparisons as :meth:`test`, without a Python
        call per row and node (a HAVING over 10^5 groups took a third of a second per snapshot row by row)."""
        value, null = self._vector(self._tree, columns, length)
        return ~null & (value == True)  # noqa: E712 - elementwise over an object array

    def _vector(self, node, columns, n):
        """(values as an object array, NULL mask) of ``node`` over the rows."""
        if isinstance(node, ast.Name):
            column = columns[node.id]
            values = (np.asarray(column.to_numpy(dtype=object) if isinstance(column, pd.Series) else column,
                                 dtype=object) if np.ndim(column) else np.full(n, column, dtype=object))
            return values, np.array([_null(v) for v in values], dtype=bool)
        if isinstance(node, ast.Constant):
            value = Decimal(str(node.value)) if isinstance(node.value, float) else node.value
            return np.full(n, value, dtype=object), np.full(n, value is None)
        if isinstance(node, ast.BoolOp):
            parts = [self._vector(v, columns, n) for v in node.values]
            decided = (False if isinstance(node.op, ast.And) else True)  # one such operand decides the result
            hit = np.any([~m & (v == decided) for v, m in parts], axis=0)
            null = ~hit & np.any([m for _, m in parts], axis=0)
            return np.where(hit, decided, not decided).astype(object), null
        if isinstance(node, ast.UnaryOp):
            values, null = self._vector(node.operand, columns, n)
            out = np.empty(n, dtype=object)
            out[~null] = ~values[~null].astype(bool) if isinstance(node.op, ast.Not) else -values[~null]
            return out, null
        if isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            _, null = self._vector(node.left, columns, n)
            return (null if isinstance(node.ops[0], ast.Is) else ~null).astype(object), np.zeros(n, dtype=bool)
        if isinstance(node, ast.Call):
            values, null = self._vector(node.args[0], columns, n)
            out = np.empty(n, dtype=object)
            out[~null] = [_sqrt(v) for v in values[~null]]
            return out, null
        left, lnull = self._vector(node.left, columns, n)
        right, rnull = self._vector(node.comparators[0] if isinstance(node, ast.Compare) else node.right, columns, n)
        null = lnull | rnull
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            null |= ~null & np.array([r == 0 for r in right], dtype=bool)
        live = ~null
        a, b = _comparable_arrays(left[live], right[live])
        op = _COMPARE[type(node.ops[0])] if isinstance(node, ast.Compare) else _BINARY[type(node.op)]
        out = np.empty(n, dtype=object)
        out[live] = op(a, b) if live.any() else []
        return out, null

    def __repr__(self):
        return f"Expression({self.text!r})"


def _null(value) -> bool:
    """Whether a column's value is SQL's NULL: None, or a float NaN (how pandas holds a missing number)."""
    return value is None or (isinstance(value, float) and value != value)


def _comparable(left, right):
    """Two numbers in one type (a float with a Decimal: both Decimal), anything else as it is."""
    if isinstance(left, float) and isinstance(right, Decimal):
        return Decimal(repr(left)), right
    if isinstance(right, float) and isinstance(left, Decimal):
        return left, Decimal(repr(right))
    return left, right


def _comparable_arrays(left: np.ndarray, right: np.ndarray):
    """:func:`_comparable` over two object arrays: where floats meet Decimals, every float becomes a Decimal."""
    def has(values, kind):
        return any(issubclass(t, kind) for t in set(map(type, values)))

    if not ((has(left, float) and has(right, Decimal)) or (has(right, float) and has(left, Decimal))):
        return left, right
    exact = np.frompyfunc(lambda v: Decimal(repr(float(v))) if isinstance(v, float) else v, 1, 1)
    return exact(left), exact(right)


def _sqrt(value):
    """Square root of a scalar, array or Series; NULL (None) stays NULL, a negative value gives NaN."""
    if isinstance(value, pd.Series):
        return value.map(lambda v: None if v is None else _sqrt(v))
    if isinstance(value, Decimal):
        return value.sqrt() if value >= 0 else Decimal("NaN")
    if isinstance(value, (int, float)):
        return math.sqrt(value) if value >= 0 else float("nan")
    return np.sqrt(value)


def _divide_exactly(left, right):
    """``left / right`` on Decimals, NULL (None) where ``right`` is zero: the totals of a query without groups
    over no rows (a NULL sum over a zero count, which SQL divides to NULL)."""
    try:
        return left / right
    except (ArithmeticError, TypeError):
        if not isinstance(left, pd.Series) and not isinstance(right, pd.Series):
            return None
        pairs = pd.DataFrame({"l": left, "r": right})
        return pd.Series([None if r == 0 or r is None or l is None else l / r for l, r in zip(pairs.l, pairs.r)],
                         index=pairs.index, dtype=object)
