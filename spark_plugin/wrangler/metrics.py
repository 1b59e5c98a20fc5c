"""How good the predictions are on held-out rows: TPR, FPR, precision, balanced accuracy, AUC.

Reported before the confidence threshold (score > 0) and after it (score > 0 and
confidence > p), pooled and per node, as spec §11.4 asks; :func:`counter_importance` says which
counters carried the ranking.
"""

from __future__ import annotations

import numpy as np
from sklearn.inspection import permutation_importance
from sklearn.metrics import roc_auc_score

from ..arguments import by_key
from .dataset import Dataset


def is_flagged(score, confidence, p: float):
    """Whether predictions flag their node, element-wise: ``score > 0 and confidence > p``.

    For offline evaluation; at run time the driver JVM flags (``JvmDecisions.choose``).

    Examples
    --------
    >>> is_flagged([0.1, 0.1, -0.1, 0.1], [0.71, 0.7, 0.99, 0.2], 0.7).tolist()
    [True, False, False, False]
    """
    return np.logical_and(np.asarray(score) > 0, np.asarray(confidence) > p)


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
    """Score ``predictor`` on ``data`` (rows it was not trained on): pooled, and per node with the ROC AUC of
    the node's own rows (how well its model ranks them, the thesis's per-node measure).

    ``confidence`` is checked by ``spark.wrangler.confidence``'s rule; ``data``'s counters are matched to
    the model's by name (:meth:`.Dataset.select`)."""
    confidence = by_key("spark.wrangler.confidence", confidence, what="evaluate's confidence")
    data = data.select(predictor.features_)
    scores, conf = predictor.predict(data.X, data.nodes, data.workloads)
    after = is_flagged(scores, conf, confidence)
    out = {"rows": len(data), "stragglers": int(data.y.sum()), "confidence": confidence,
           "before_threshold": rates(data.y, scores > 0), "after_threshold": rates(data.y, after),
           "roc_auc": float(roc_auc_score(data.y, conf)) if len(np.unique(data.y)) == 2 else float("nan"),
           "per_node": {}}
    for node in sorted(set(data.nodes)):
        rows = data.nodes == node
        both = len(np.unique(data.y[rows])) == 2
        out["per_node"][node] = {"model": predictor.model_kind(node), **rates(data.y[rows], after[rows]),
                                 "roc_auc": float(roc_auc_score(data.y[rows], conf[rows])) if both else float("nan")}
    out["counters"] = counter_importance(predictor, data)
    return out


def counter_importance(predictor, data: Dataset, *, repeats: int = 5, top: int = 10,
                       random_state: int = 0) -> list[dict]:
    """The counters that carried the prediction on ``data``: how much held-out ROC AUC falls when one
    counter's column is shuffled (permutation importance), largest first, the ``top`` ones.

    The thesis explains predictions post hoc by feature category (spec §3); a permutation on held-out
    rows answers the question users ask of a new counter set directly, "did the container counters
    matter?", and is blind to the model's scaling. Counters that carry the same signal share it (while one
    is shuffled the other still ranks), so read the list as a whole. Counters whose shuffle changes
    nothing are left out.

    Returns
    -------
    list of dict
        ``counter``, ``auc_drop`` (mean over ``repeats`` shuffles) and ``std``; empty when ``data`` has
        one class only.
    """
    if len(np.unique(data.y)) < 2:
        return []
    data = data.select(predictor.features_)

    def auc(_, X, y):
        return roc_auc_score(y, predictor.predict(X, data.nodes, data.workloads)[0])

    found = permutation_importance(predictor, data.X, data.y, scoring=auc, n_repeats=repeats,
                                   random_state=random_state)
    order = np.argsort(-found.importances_mean, kind="stable")
    return [{"counter": data.features[i], "auc_drop": float(found.importances_mean[i]),
             "std": float(found.importances_std[i])}
            for i in order[:top] if found.importances_mean[i] != 0 or found.importances_std[i] != 0]


#: Candidate thresholds for :func:`choose_confidence`; the thesis's best values were 0.7 and 0.8.
CONFIDENCE_GRID = tuple(round(p, 2) for p in np.arange(0.5, 0.951, 0.05))


def choose_confidence(predictor, data: Dataset, *, grid=CONFIDENCE_GRID, tolerance: float = 0.02) -> dict:
    """Learn p on validation rows as the thesis does (spec §5): per node, the range of thresholds whose
    predictions are most accurate; then the median of the thresholds a majority of nodes agree on.

    "Accurate" is balanced accuracy, (TPR + 1 - FPR) / 2: plain accuracy would reward flagging nothing
    when stragglers are rare, and the confidences already refer to a balanced prior (oversampling).
    A node's range is every threshold within ``tolerance`` of its best; nodes whose rows hold one class
    only cannot tell thresholds apart and do not vote. Without a majority, p is the median of the nodes'
    best thresholds; without any voting node, the grid's middle.

    Returns
    -------
    dict
        ``confidence`` (the chosen p), ``quorum`` (the thresholds a majority agrees on) and ``per_node``
        (``best``, ``range`` as [low, high], ``balanced_accuracy`` at the best).
    """
    data = data.select(predictor.features_)
    scores, conf = predictor.predict(data.X, data.nodes, data.workloads)
    per_node = {}
    for node in sorted(set(data.nodes)):
        rows = data.nodes == node
        if len(np.unique(data.y[rows])) < 2:
            continue
        accuracy = [rates(data.y[rows], is_flagged(scores[rows], conf[rows], p))["balanced_accuracy"] for p in grid]
        good = [p for p, a in zip(grid, accuracy) if a >= max(accuracy) - tolerance]
        best = int(np.argmax(accuracy))
        per_node[node] = {"best": grid[best], "range": [min(good), max(good)], "balanced_accuracy": accuracy[best]}
    quorum = quorum_thresholds([v["range"] for v in per_node.values()], grid)
    if quorum:
        p = float(np.median(quorum))
    elif per_node:
        p = float(np.median([v["best"] for v in per_node.values()]))
    else:
        p = float(np.median(grid))
    return {"confidence": p, "quorum": quorum, "per_node": per_node}


def quorum_thresholds(ranges, grid) -> list:
    """The thresholds of ``grid`` inside the ``[low, high]`` ranges of more than half of them.

    Examples
    --------
    >>> quorum_thresholds([[0.6, 0.8], [0.7, 0.9], [0.5, 0.55]], (0.5, 0.55, 0.6, 0.7, 0.8, 0.9))
    [0.7, 0.8]
    """
    return [p for p in grid if 2 * sum(low <= p <= high for low, high in ranges) > len(ranges)]
