"""Wrangler: predict which executors will straggle and hold back their task offers.

* :func:`label_tasks`, :func:`build_dataset`: labelled rows from telemetry (a task
  straggles when its duration per byte exceeds beta times its stage's median; its
  features are its executor's node counters sampled at or before its launch);
* :class:`StragglerPredictor`: a Platt-calibrated linear SVM per node with the
  multi-task f_{0,n,l} model for nodes with little data; :func:`evaluate`;
  :func:`choose_confidence` learns the threshold p on validation rows;
* :func:`to_json` (:mod:`.export`): a fitted predictor as the JSON model the driver JVM scores;
* :class:`Wrangler` / :func:`start`: gives the driver JVM its model (given, from
  ``spark.wrangler.model.path``, or trained online after the warm-up) and reads its decisions back.
  The JVM alone decides (``dev.sparkrm.wrangler.JvmDecisions``): every interval it flags an executor
  when its score > 0 and confidence > p, never holds every executor, holds silent ones, and holds
  (``spark.wrangler.mode=hold``) or logs hints.

``python -m spark_plugin.wrangler train <telemetry.jsonl> --out model.joblib`` trains
offline from recorded telemetry.
"""

from .dataset import Dataset, build_dataset
from .labels import label_tasks
from .loop import Wrangler, running, start
from .export import to_json
from .metrics import choose_confidence, evaluate, is_flagged
from .model import CalibratedSVM
from .multitask import MultiTaskSVM
from .predictor import StragglerPredictor
from ._jvm import WranglerUnavailable

__all__ = ["CalibratedSVM", "Dataset", "MultiTaskSVM", "StragglerPredictor", "build_dataset", "choose_confidence",
           "evaluate", "is_flagged", "label_tasks", "to_json", "Wrangler", "WranglerUnavailable", "running", "start"]
