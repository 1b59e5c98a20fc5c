"""Arithmetic over aggregate totals: the output columns a progressive query derives from its sums.

A query spec says, for instance, ``avg_qty = sum_qty / count_order``. The same expression is
evaluated on exact totals (Python ``Decimal``/``int`` values, so the final answer is exact to the
cent) and on float totals (for the delta-method confidence interval). Only names, numbers,
``+ - * /`` and parentheses are accepted: specs are data, never code.
"""

from __future__ import annotations

import ast
import operator
from decimal import Decimal

import pandas as pd

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


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
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return set()
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return self._check(node.left) | self._check(node.right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return self._check(node.operand)
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
        left, right = self._eval(node.left, columns, exact), self._eval(node.right, columns, exact)
        if exact and isinstance(node.op, ast.Div):
            return _divide_exactly(left, right)
        return _BINARY[type(node.op)](left, right)

    def __repr__(self):
        return f"Expression({self.text!r})"


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
