"""Rotary's estimators: accuracy progress (for ranking jobs) and memory (for admission and epochs).

Progress (thesis 3.3.1, spec 7.4): fit accuracy against runtime by weighted least squares over the
runs of the k most similar past jobs plus this job's live points, and read the curve at
``now + next epoch``. Each live point and the historical block as a whole weigh the same: with r
live points, 1/(r+1) each, and the h historical points share 1/(r+1). The curve is a polynomial of
degree up to 3 (the author's code), clipped to [0, 1]. Similarity: Jaccard over the tables and
columns a query's SQL names, plus equal batch counts (the thesis compares predicates, tables,
columns and batch size).

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

from .queries import QuerySpec

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

    def nearest(self, feats: dict, k: int) -> list[PastRun]:
        ranked = sorted(self.runs, key=lambda r: similarity(feats, r.features), reverse=True)
        return ranked[:k]


class ProgressEstimator:
    """Predicted accuracy of a job at a future runtime."""

    def __init__(self, history: History | None = None, k: int = 5, degree: int = 3):
        self.history, self.k, self.degree = history or History(), k, degree

    def predict(self, feats: dict, live: list[tuple[float, float]], at_s: float) -> float:
        past = [p for run in self.history.nearest(feats, self.k) for p in run.points]
        if not live and not past:
            return 0.0
        live_w, past_w = regression_weights(len(live), len(past))
        points = np.array(list(live) + past, dtype=float).reshape(-1, 2)
        weights = np.array([live_w] * len(live) + [past_w] * len(past))
        distinct = len(np.unique(points[:, 0]))
        if distinct < 2:
            return float(np.clip(np.average(points[:, 1], weights=weights), 0, 1))
        # np.polyfit weights multiply residuals: pass sqrt to weigh squared errors by `weights`.
        coeffs = np.polyfit(points[:, 0], points[:, 1], min(self.degree, distinct - 1), w=np.sqrt(weights))
        return float(np.clip(np.polyval(coeffs, at_s), 0.0, 1.0))


def batch_input_bytes(spec: QuerySpec, data) -> float:
    """Bytes one batch of ``spec`` reads: the batched tables it names at 1/B, other tables whole.

    This is the size Spark's optimizer assigns a file relation (its files' bytes), per batch.
    """
    from .batches import DIMENSION_TABLES
    from .queries import SAMPLED_TABLES

    words = set(_WORD.findall(spec.sql.lower()))
    total = 0.0
    for table in SAMPLED_TABLES:
        if table in words:
            total += _folder_bytes(data.folder / table) / data.batches
    for table in DIMENSION_TABLES:
        if table in words:
            total += _folder_bytes(data.data / table)
    return total


def _folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in Path(folder).rglob("*.parquet"))
