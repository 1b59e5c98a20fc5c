"""Wrangler: predict which executors will straggle and hold back their task offers.

* :func:`label_tasks`, :func:`build_dataset`: labelled rows from telemetry (a task
  straggles when its duration per byte exceeds beta times its stage's median; its
  features are its executor's node counters sampled at or before its launch);
* :class:`StragglerPredictor`: a Platt-calibrated linear SVM per node with the
  multi-task f_{0,n,l} model for nodes with little data; :func:`evaluate`;
  :func:`choose_confidence` learns the threshold p on validation rows;
* :func:`choose_holds`: the scheduling rule (flag when score > 0 and confidence > p,
  never hold every executor);
* :class:`Wrangler` / :func:`start`: the driver-side loop that applies the rule every
  interval, holding executors (``spark.wrangler.mode=hold``) or logging hints.

``python -m spark_plugin.wrangler train <telemetry.jsonl> --out model.joblib`` trains
offline from recorded telemetry.
"""

from .dataset import Dataset, build_dataset
from .labels import label_tasks
from .loop import Wrangler, running, start
from .metrics import choose_confidence, evaluate
from .model import CalibratedSVM
from .multitask import MultiTaskSVM
from .policy import choose_holds, is_flagged
from .predictor import StragglerPredictor
from ._jvm import WranglerUnavailable

__all__ = ["CalibratedSVM", "Dataset", "MultiTaskSVM", "StragglerPredictor", "build_dataset", "choose_confidence", "choose_holds",
           "evaluate", "is_flagged", "label_tasks", "Wrangler", "WranglerUnavailable", "running", "start"]
