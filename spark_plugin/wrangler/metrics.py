"""How good the predictions are on held-out rows: TPR, FPR, precision, balanced accuracy, AUC.

Reported before the confidence threshold (score > 0) and after it (score > 0 and
confidence > p), pooled and per node, as spec §11.4 asks.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import roc_auc_score

from .dataset import Dataset
from .policy import is_flagged


def rates(y: np.ndarray, predicted: np.ndarray) -> dict:
    """Confusion counts and the rates derived from them (NaN where undefined).

    Examples
    --------
    >>> r = rates(np.array([1, 1, 0, 0]), np.array([1, 0, 1, 0]))
    >>> r["tpr"], r["fpr"], r["tp"]
    (0.5, 0.5, 1)
    """
    y, predicted = np.asarray(y, bool), np.asarray(predicted, bool)
    tp, fn = int((y & predicted).sum()), int((y & ~predicted).sum())
    fp, tn = int((~y & predicted).sum()), int((~y & ~predicted).sum())
    tpr = tp / (tp + fn) if tp + fn else float("nan")
    fpr = fp / (fp + tn) if fp + tn else float("nan")
    return {"tp": tp, "fn": fn, "fp": fp, "tn": tn, "tpr": tpr, "fpr": fpr,
            "precision": tp / (tp + fp) if tp + fp else float("nan"),
            "balanced_accuracy": (tpr + 1 - fpr) / 2}


def evaluate(predictor, data: Dataset, *, confidence: float) -> dict:
    """Score ``predictor`` on ``data`` (rows it was not trained on)."""
    scores, conf = predictor.predict(data.X, data.nodes, data.workloads)
    after = is_flagged(scores, conf, confidence)
    out = {"rows": len(data), "stragglers": int(data.y.sum()), "confidence": confidence,
           "before_threshold": rates(data.y, scores > 0), "after_threshold": rates(data.y, after),
           "roc_auc": float(roc_auc_score(data.y, conf)) if len(np.unique(data.y)) == 2 else float("nan"),
           "per_node": {}}
    for node in sorted(set(data.nodes)):
        rows = data.nodes == node
        out["per_node"][node] = {"model": predictor.model_kind(node), **rates(data.y[rows], after[rows])}
    return out
