"""A fitted :class:`.StragglerPredictor` as JSON, the form the driver JVM decides with (``dev.sparkrm.wrangler.WranglerModel``).

Every model reaches the JVM this way: ``spark.wrangler.model.path`` naming such a file (a ``spark-submit
--conf`` application then holds with no Python driver), or Wrangler's Python side exporting a given, loaded
or online-trained predictor and installing it through py4j. The JVM reads the counters the executors send,
scores them and decides. The file holds
exactly what ``predict`` computes with: the min-max scaler (``x * scale + offset``, clipped to [0, 1],
missing counters 0), each per-node SVM (weights, intercept, sigmoid calibrators ``(a, b)``: confidence is
the mean of ``1 / (1 + exp(a * score + b))``), and the multi-task model with its node and workload blocks
already multiplied by their square-root factors, so its weights for a node and workload are the sum of
the three. NaN (a counter never seen in training) is written as ``null``.

The file's schema and its check are :mod:`.model_file`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from .model import Abstaining
from .model_file import FORMAT

def _vector(values) -> list:
    return [None if math.isnan(v) else float(v) for v in np.asarray(values, dtype=float).ravel()]


def _linear(model) -> dict:
    """A :class:`.CalibratedSVM` (or an :class:`.Abstaining` one) as weights, intercept and sigmoid calibrators."""
    if isinstance(model, Abstaining):
        return {"weights": [0.0] * model.fitted.svm_.coef_.shape[1], "intercept": Abstaining.SCORE,
                "sigmoids": model.sigmoids()}
    return {"weights": _vector(model.svm_.coef_[0]), "intercept": float(model.svm_.intercept_[0]),
            "sigmoids": model.sigmoids()}


def to_json(predictor) -> dict:
    """The JSON document of a fitted predictor."""
    shared = predictor.shared_
    d = len(predictor.features_)
    w = shared.model_.svm_.coef_[0]

    def blocks(ids, offset):
        return {name: _vector(np.sqrt(len(ids)) * w[(offset + i) * d:(offset + i + 1) * d])
                for i, name in enumerate(ids)}

    return {
        "format": FORMAT,
        "features": list(predictor.features_),
        "scaler": {"scale": _vector(predictor.scaler_.scale_), "offset": _vector(predictor.scaler_.min_)},
        "shared": {**_linear(shared.model_), "weights": _vector(w[:d]),
                   "nodes": blocks(shared.node_ids_, 1),
                   "workloads": blocks(shared.workload_ids_, 1 + len(shared.node_ids_))},
        "nodes": {node: _linear(model) for node, model in predictor.node_models_.items()},
    }


def write_json(predictor, path) -> Path:
    """Write ``predictor`` to ``path`` as JSON for the JVM; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_json(predictor)))
    return path
