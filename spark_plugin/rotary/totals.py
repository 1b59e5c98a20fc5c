"""Running per-group totals of a progressive query, and what they say about the full answer.

For each group the state keeps the exact totals of the batches processed so far (``Decimal`` and
``int`` as Spark returned them, so the last batch gives the exact answer) and, as floats, the sum
and the sum of products of the per-batch partials. The per-batch partials are an i.i.d.-style
sample of B batches drawn without replacement, so after b batches the total is estimated as
``B * mean`` with covariance ``B^2 * S / b * (1 - b / B)`` (S the sample covariance; the last factor
is the finite-population correction, zero once every batch is in). Output columns derived from
totals get their variance by the delta method. Intervals use Student's t with b - 1 degrees of
freedom: after a handful of batches the normal quantile would cover too little.
"""

from __future__ import annotations

from decimal import Decimal
from itertools import combinations_with_replacement
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import t as student_t

from .queries import QuerySpec

ALL_ROWS_KEY = "_all"  # the one group of a query without @keys


class RunningTotals:
    def __init__(self, keys: list[str], totals: list[str]):
        self.keys = list(keys) or [ALL_ROWS_KEY]
        self.totals = list(totals)
        self.pairs = list(combinations_with_replacement(self.totals, 2))
        self.batches_done = 0
        self.exact = pd.DataFrame(columns=self.totals, dtype=object)
        self.sums = pd.DataFrame(columns=self.totals, dtype=float)
        self.products = pd.DataFrame(columns=[_pair(a, b) for a, b in self.pairs], dtype=float)

    def add(self, partials: pd.DataFrame) -> None:
        """Fold in one batch's per-group partials (key columns plus one column per total)."""
        partials = partials.copy()
        if ALL_ROWS_KEY not in partials and self.keys == [ALL_ROWS_KEY]:
            partials[ALL_ROWS_KEY] = 0
        partials = partials.set_index(self.keys)
        exact = partials[self.totals].map(lambda v: 0 if v is None or v != v else v).astype(object)
        floats = exact.map(float).astype(float)
        products = pd.DataFrame({_pair(a, b): floats[a] * floats[b] for a, b in self.pairs}, index=floats.index)
        if self.batches_done == 0 or self.exact.empty:
            self.exact, self.sums, self.products = exact, floats, products
        else:
            self.exact = self.exact.add(exact, fill_value=0)
            self.sums = self.sums.add(floats, fill_value=0.0)
            self.products = self.products.add(products, fill_value=0.0)
        self.batches_done += 1

    def estimate(self, spec: QuerySpec, batches: int, confidence: float) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The answer's estimate (outputs, ordered and limited) and the CI half-widths of its aggregates."""
        b, exact_groups = self.batches_done, spec.exact_groups
        z = student_t.ppf((1 + confidence) / 2, b - 1) if b > 1 else np.nan
        exact_scale = Decimal(1) if exact_groups else Decimal(batches) / Decimal(b)
        totals_exact = {c: self.exact[c].map(lambda v: _times(v, exact_scale)) for c in self.totals}
        if not exact_groups:
            totals_float = {c: self.sums[c] * (batches / b) for c in self.totals}
            cov = self._covariance(batches)
        result = pd.DataFrame(index=self.exact.index)
        half = pd.DataFrame(index=self.exact.index)
        for out in spec.outputs:
            if out.name in spec.keys:
                continue
            if out.derived:
                result[out.name] = out.expression.evaluate(totals_exact, exact=True)
                var = None if exact_groups else self._delta_variance(out.expression, totals_float, cov)
            else:
                result[out.name] = totals_exact[out.name]
                var = None if exact_groups else cov[(out.name, out.name)]
            half[out.name] = 0.0 if exact_groups else z * np.sqrt(var)  # groups seen whole are exact
        result = result.reset_index()
        half = half.reset_index()
        if ALL_ROWS_KEY in result:
            result, half = result.drop(columns=ALL_ROWS_KEY), half.drop(columns=ALL_ROWS_KEY)
        result = result[spec.columns]
        if spec.order:
            by = [c for c, _ in spec.order]
            rank = result[by].apply(lambda s: s.map(_sortable))
            rank = rank.sort_values(by, ascending=[not desc for _, desc in spec.order], kind="mergesort")
            result, half = result.loc[rank.index], half.loc[rank.index]
        if spec.limit is not None:
            result, half = result.head(spec.limit), half.head(spec.limit)
        return result.reset_index(drop=True), half.reset_index(drop=True)

    def _covariance(self, batches: int) -> dict:
        """Covariance of the estimated totals, per pair of totals (Series over groups)."""
        b = self.batches_done
        if b < 2:
            return {(a, c): pd.Series(np.nan, index=self.sums.index) for a in self.totals for c in self.totals}
        mean = self.sums / b
        factor = batches ** 2 / b * (1 - b / batches) / (b - 1)
        cov = {}
        for a, c in self.pairs:
            s = (self.products[_pair(a, c)] - b * mean[a] * mean[c]).clip(lower=0 if a == c else None)
            cov[(a, c)] = cov[(c, a)] = s * factor
        return cov

    @staticmethod
    def _delta_variance(expression, totals: dict, cov: dict) -> pd.Series:
        base = expression.evaluate(totals)
        grad = {}
        for name in expression.names:
            step = np.maximum(totals[name].abs(), 1.0) * 1e-6
            moved = dict(totals, **{name: totals[name] + step})
            grad[name] = (expression.evaluate(moved) - base) / step
        var = sum(grad[a] * grad[c] * cov[(a, c)] for a in grad for c in grad)
        return var.clip(lower=0)

    # -- checkpoint --------------------------------------------------------------------------
    def save(self, path: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        frame = pd.concat([self.exact.add_prefix("exact."), self.sums.add_prefix("sum."),
                           self.products.add_prefix("prod.")], axis=1).reset_index()
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)

    def load(self, path: Path, batches_done: int) -> None:
        import pyarrow.parquet as pq

        frame = pq.read_table(path).to_pandas().set_index(self.keys)
        self.exact = frame[[f"exact.{c}" for c in self.totals]].rename(columns=lambda c: c[6:]).astype(object)
        self.exact = self.exact.map(lambda v: int(v) if isinstance(v, (np.integer,)) else v)
        self.sums = frame[[f"sum.{c}" for c in self.totals]].rename(columns=lambda c: c[4:]).astype(float)
        self.products = frame[[f"prod.{_pair(a, b)}" for a, b in self.pairs]].rename(columns=lambda c: c[5:])
        self.batches_done = batches_done


def _pair(a: str, b: str) -> str:
    return f"{a}*{b}"


def _times(value, scale: Decimal):
    if isinstance(value, float):
        return value * float(scale)
    return value if scale == 1 else Decimal(value) * scale


def _sortable(value):
    return float(value) if isinstance(value, (Decimal, int, float)) else value
