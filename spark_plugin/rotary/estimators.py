"""Rotary's estimators: accuracy progress (for ranking jobs) and memory (for admission and epochs).

Progress (thesis 3.3.1, spec 7.4): fit accuracy against runtime by weighted least squares over the
runs of the k most similar past jobs plus this job's live points, and read the curve at
``now + next epoch`` (:meth:`ProgressEstimator.predict`) or find where it reaches the job's
threshold (:meth:`ProgressEstimator.time_to`, the runtime the job needs to attain). Each live point and the historical block as a whole weigh the same: with r
live points, 1/(r+1) each, and the h historical points share 1/(r+1). The curve is a polynomial of
degree up to 3 (the author's code), clipped to [0, 1]. Similarity: Jaccard over the tables and
columns a query's SQL names, plus equal batch counts (the thesis compares predicates, tables,
columns and batch size). Only past runs at least ``min_similarity`` (0.8) alike count among the
k (the single nearest when none is): on a history of one run per TPC-H query, the k = 5 nearest
would otherwise blend other queries' curves. On the recorded SF 0.1 curves (11 queries, 9
thresholds, cold start) the predicted time to reach a threshold was off by a median 1.33x (max
2.18x) with the blend and 1.07x (max 1.75x) without it.

Memory (spec 7.5): the size Spark's optimizer gives one batch's inputs (file bytes of every table
the query reads, the batched ones at 1/B). Epochs are then
proportional to it (``epoch = base * m / m_min``), so heavy jobs report progress as often per unit
of work as light ones.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .spec import QuerySpec

_WORD = re.compile(r"\b[a-z_][a-z0-9_]*\b")


def regression_weights(live: int, historical: int) -> tuple[float, float]:
    """Weight of each live point and of each historical point."""
    share = 1.0 / (live + 1)
    return share, (share / historical if historical else 0.0)


def features(spec: QuerySpec, batches: int) -> dict:
    """What makes two progressive jobs comparable."""
    return {"query": spec.name, "words": sorted(set(_WORD.findall(spec.sql.lower()))), "batches": batches}


def similarity(a: dict, b: dict) -> float:
    words_a, words_b = set(a["words"]), set(b["words"])
    jaccard = len(words_a & words_b) / max(1, len(words_a | words_b))
    return jaccard * (1.0 if a["batches"] == b["batches"] else 0.5)


@dataclass
class PastRun:
    features: dict
    points: list  # [runtime_s, accuracy] pairs


class History:
    """Past runs' accuracy-vs-runtime curves, kept in a JSON-lines file (or in memory)."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else None
        self.runs: list[PastRun] = []
        if self.path and self.path.is_file():
            for line_no, line in enumerate(self.path.read_text().splitlines(), 1):
                try:
                    self.runs.append(PastRun(**json.loads(line)))
                except (ValueError, TypeError) as e:
                    raise ValueError(f"{self.path}:{line_no} is not a past run record: {e}") from None

    def add(self, run: PastRun) -> None:
        self.runs.append(run)
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a") as f:
                f.write(json.dumps(asdict(run)) + "\n")

    def nearest(self, feats: dict, k: int, min_similarity: float = 0.0) -> list[PastRun]:
        """The ``k`` most similar runs, leaving out those below ``min_similarity`` unless none is above."""
        scored = sorted(((similarity(feats, r.features), r) for r in self.runs), key=lambda sr: sr[0], reverse=True)
        close = [run for score, run in scored if score >= min_similarity] or [run for _, run in scored[:1]]
        return close[:k]


class ProgressEstimator:
    """Predicted accuracy of a job at a future runtime, and the runtime it needs to reach a level."""

    def __init__(self, history: History | None = None, k: int = 5, degree: int = 3, min_similarity: float = 0.8):
        self.history, self.k, self.degree, self.min_similarity = history or History(), k, degree, min_similarity

    def predict(self, feats: dict, live: list[tuple[float, float]], at_s: float) -> float:
        curve = self._curve(feats, live)
        return 0.0 if curve is None else float(curve(at_s))

    def time_to(self, feats: dict, live: list[tuple[float, float]], level: float, horizon_s: float) -> float | None:
        """Runtime at which the fitted curve first reaches ``level``: ``horizon_s`` if not before.

        The search starts at the latest live point (the job's runtime so far). ``None`` when
        there is nothing to fit. ``horizon_s`` is the runtime of the whole input, where a
        progressive job holds its exact answer and so meets any accuracy level.
        """
        curve = self._curve(feats, live)
        if curve is None:
            return None
        start = live[-1][0] if live else 0.0
        if start >= horizon_s:
            return horizon_s
        grid = np.linspace(start, horizon_s, 64)
        reached = np.flatnonzero(curve(grid) >= level)
        return float(grid[reached[0]]) if reached.size else horizon_s

    def run_length_s(self, feats: dict) -> float | None:
        """Runtime of the whole input for the most similar past run (``None`` without history)."""
        nearest = self.history.nearest(feats, 1)
        return nearest[0].points[-1][0] if nearest and nearest[0].points else None

    def _curve(self, feats: dict, live: list[tuple[float, float]]):
        """The weighted fit over the k nearest past runs and the live points, clipped to [0, 1]."""
        past = [p for run in self.history.nearest(feats, self.k, self.min_similarity) for p in run.points]
        if not live and not past:
            return None
        live_w, past_w = regression_weights(len(live), len(past))
        points = np.array(list(live) + past, dtype=float).reshape(-1, 2)
        weights = np.array([live_w] * len(live) + [past_w] * len(past))
        distinct = len(np.unique(points[:, 0]))
        if distinct < 2:
            level = float(np.clip(np.average(points[:, 1], weights=weights), 0, 1))
            return lambda t: np.full(np.shape(t), level)
        # np.polyfit weights multiply residuals: pass sqrt to weigh squared errors by `weights`.
        coeffs = np.polyfit(points[:, 0], points[:, 1], min(self.degree, distinct - 1), w=np.sqrt(weights))
        return lambda t: np.clip(np.polyval(coeffs, t), 0.0, 1.0)


def batch_input_bytes(spec: QuerySpec, data) -> float:
    """Bytes one batch of ``spec`` reads: the tables its layout samples at 1/B, the others whole.

    This is the size Spark's optimizer assigns a file relation (its files' bytes), per batch.
    """
    from .spec import TABLES

    words = set(_WORD.findall(" ".join([spec.sql, *(sql for _, sql in spec.statics)]).lower()))
    total = 0.0
    for table in TABLES:
        if table in words and table in spec.sampled_tables:
            total += _folder_bytes(data.layout_folder(spec.layout) / table) / data.batches
        elif table in words:
            total += _folder_bytes(data.data / table)
    return total


def _folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in Path(folder).rglob("*.parquet"))
