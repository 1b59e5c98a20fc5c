"""Wrangler's model set: a calibrated SVM per node, and f_{0,n,l} for nodes with little data.

Training follows spec §4 and §10: rows in launch order, the first two thirds
train and the last third calibrates (temporal split); the min-max scaler is fitted
on the training rows only and clips to [0, 1] afterwards, so nothing about later
rows leaks into the model. A node with at least ``min_node_tasks`` training rows
of both classes gets its own SVM; every other node (including one never seen)
is scored by the shared multi-task model. The thesis does not report its SVM's C; a
node model picks C from ``node_C`` by ranking quality (ROC AUC) on the calibration
third, because a few hundred rows against ~40 counters overfit at C = 1 (on the
noisy-neighbour benchmark the victim's AUC rose from 0.73 to 0.86 at C = 0.1).
Models are frozen after :meth:`fit` and saved with joblib.
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import joblib
import numpy as np
from sklearn.metrics import roc_auc_score
from sklearn.preprocessing import MinMaxScaler

from ..arguments import by_key
from ..errors import SparkrmError
from ..ownership import FileKind
from .dataset import Dataset
from .export import write_json
from .model_file import FORMAT
from .model import Abstaining, CalibratedSVM
from .multitask import MultiTaskSVM


class ModelFileError(SparkrmError, ValueError):
    """A path given as a Wrangler model holds none (missing, another file, a JSON model for Python to read)."""


def _is_model_file(path: Path) -> bool:
    """Whether ``path`` is a model :meth:`StragglerPredictor.save` wrote, without unpickling anything: a JSON
    model by its ``format`` tag, a joblib one by the class a pickle names first."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 12)
        if head.lstrip().startswith(b"{"):
            return json.loads(path.read_text()).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False
    return head.startswith(b"\x80") and __name__.encode() in head and b"StragglerPredictor" in head


#: A Wrangler model file (``train --out``, ``export --out``, :meth:`StragglerPredictor.save`).
MODEL_FILE = FileKind("Wrangler model", _is_model_file, ".joblib")


class StragglerPredictor:
    """Per-node calibrated SVMs with a multi-task fallback.

    Parameters
    ----------
    min_node_tasks : int, default=100
        Training rows a node needs for its own model (checked by ``spark.wrangler.train.minNodeTasks``'s rule).
    calibration_fraction : float, default=1/3
        The last fraction of rows (in time) that calibrates the confidence.
    node_C : tuple of float, default=(1.0, 0.1, 0.01)
        Candidate C values of the per-node SVMs; the first is used when the calibration rows of a node
        lack a class.
    random_state : int, default=0

    Attributes
    ----------
    features_ : list of str
        Counter names, in column order.
    scaler_ : sklearn.preprocessing.MinMaxScaler
        Fitted on the training rows only.
    node_models_ : dict of str to CalibratedSVM or Abstaining
        Each with the C it was chosen with (``model.C``); :class:`.Abstaining` where the node's best model
        ranked its calibration rows no better than :attr:`MIN_NODE_AUC` (it never flags that node).
    shared_ : MultiTaskSVM
    fit_seconds_ : dict of str to float
        Wall time to fit each node model, and ``"shared"`` for the multi-task one.
    n_train_ : int
    """

    def __init__(self, *, min_node_tasks: int = 100, calibration_fraction: float = 1 / 3,
                 node_C: tuple = (1.0, 0.1, 0.01), random_state: int = 0):
        self.min_node_tasks = by_key("spark.wrangler.train.minNodeTasks", min_node_tasks,
                                     what="StragglerPredictor's min_node_tasks")
        self.calibration_fraction = calibration_fraction
        self.node_C = tuple(node_C)
        self.random_state = random_state

    #: Fewest labelled rows, and of each class among the training rows, a model is fitted on.
    MIN_ROWS, MIN_CLASS_ROWS = 30, 3
    #: Held-out ROC AUC a node's own model must beat to flag its node (else it abstains), and below which
    #: ``train`` warns that the whole model is close to chance.
    MIN_NODE_AUC = 0.6

    @classmethod
    def untrainable_reason(cls, data: Dataset, calibration_fraction: float = 1 / 3) -> str | None:
        """Why ``data`` cannot train a model yet (one sentence), or ``None`` when it can."""
        if len(data) < cls.MIN_ROWS:
            return f"{len(data)} labelled tasks with a node sample; it needs at least {cls.MIN_ROWS}."
        train, _ = data.split(1 - calibration_fraction)
        stragglers = int(train.y.sum())
        if min(stragglers, len(train) - stragglers) < cls.MIN_CLASS_ROWS:
            return (f"the first {len(train)} of {len(data)} labelled tasks hold {stragglers} stragglers; it needs at "
                    f"least {cls.MIN_CLASS_ROWS} stragglers and {cls.MIN_CLASS_ROWS} other tasks to learn from.")
        return None

    def fit(self, data: Dataset) -> "StragglerPredictor":
        """Train on ``data`` (rows in launch order)."""
        train, cal = data.split(1 - self.calibration_fraction)
        self.features_ = list(data.features)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN counters (no cgroup) scale to NaN, then 0
            self.scaler_ = MinMaxScaler(clip=True).fit(train.X)
        Xt, Xc = self._scale(train.X), self._scale(cal.X)
        self.fit_seconds_ = {}
        start = time.perf_counter()
        self.shared_ = MultiTaskSVM(random_state=self.random_state).fit(
            Xt, train.y, train.nodes, train.workloads, Xc, cal.y, cal.nodes, cal.workloads)
        self.fit_seconds_["shared"] = time.perf_counter() - start
        self.node_models_ = {}
        for node in sorted(set(train.nodes)):
            rows, cal_rows = train.nodes == node, cal.nodes == node
            if rows.sum() < self.min_node_tasks or len(np.unique(train.y[rows])) < 2:
                continue
            start = time.perf_counter()
            self.node_models_[node] = self._fit_node(Xt[rows], train.y[rows], Xc[cal_rows], cal.y[cal_rows])
            self.fit_seconds_[node] = time.perf_counter() - start
        self.n_train_ = len(train)
        return self

    def _fit_node(self, X, y, X_cal, y_cal):
        """The candidate C whose SVM ranks the calibration rows best (ties: the earlier candidate); an
        :class:`.Abstaining` model when even that one ranks them no better than ``MIN_NODE_AUC``."""
        fits = [CalibratedSVM(C=C, random_state=self.random_state).fit(X, y, X_cal, y_cal) for C in self.node_C]
        if len(np.unique(y_cal)) < 2:
            return fits[0]
        aucs = [roc_auc_score(y_cal, model.decision_function(X_cal)) for model in fits]
        best = int(np.argmax(aucs))
        return fits[best] if aucs[best] > self.MIN_NODE_AUC else Abstaining(fits[best], aucs[best])

    def predict(self, X, nodes, workloads) -> tuple[np.ndarray, np.ndarray]:
        """SVM scores and calibrated confidences, one per row.

        Parameters
        ----------
        X : array of shape (n, d)
            Raw counters in :attr:`features_` order.
        nodes, workloads : sequence of str
        """
        nodes, workloads = np.asarray(nodes, dtype=object), np.asarray(workloads, dtype=object)
        Xs = self._scale(np.asarray(X, dtype=float))
        scores = self.shared_.decision_function(Xs, nodes, workloads)
        conf = self.shared_.confidence(Xs, nodes, workloads)
        for node, model in self.node_models_.items():
            rows = nodes == node
            if rows.any():
                scores[rows] = model.decision_function(Xs[rows])
                conf[rows] = model.confidence(Xs[rows])
        return scores, conf

    def calibration_auc(self, data: Dataset) -> float:
        """ROC AUC of the scores on the held-out last part of ``data`` (the rows :meth:`fit` calibrated on); NaN if one class."""
        _, cal = data.split(1 - self.calibration_fraction)
        if len(np.unique(cal.y)) < 2:
            return float("nan")
        return float(roc_auc_score(cal.y, self.predict(cal.X, cal.nodes, cal.workloads)[0]))

    def model_kind(self, node: str) -> str:
        """``"node"`` when ``node`` has its own model, ``"abstaining"`` when that model never flags, else ``"shared"``."""
        if node not in self.node_models_:
            return "shared"
        return "abstaining" if isinstance(self.node_models_[node], Abstaining) else "node"

    def save(self, path, *, what: str | None = None) -> Path:
        """Write the fitted predictor to ``path``: JSON for the driver JVM to score if it ends in ``.json``, else joblib.

        Raises
        ------
        NotOursError
            If ``path`` is a folder or a file that is not a model sparkrm wrote (``what`` names the argument).
        """
        path = MODEL_FILE.check_writable(path, what=what)
        if path.suffix == ".json":
            return write_json(self, path)
        joblib.dump(self, path)
        return path

    @staticmethod
    def load(path, *, what: str | None = None) -> "StragglerPredictor":
        """Read a predictor written by :meth:`save` with joblib.

        Raises
        ------
        ModelFileError
            If the file is missing, holds something else, or is a JSON model (which only the JVM scores);
            ``what`` names the argument in the message.
        """
        label = f"{what} {path}" if what else str(path)
        fix = "Write one with `python -m spark_plugin.wrangler train <telemetry.jsonl> --out <model>.joblib`."
        if Path(path).suffix == ".json":
            raise ModelFileError(f"{label} is a JSON model, which the driver JVM scores (spark.wrangler.model.path); "
                                 f"Python reads the joblib model it was exported from.")
        if not Path(path).is_file():
            raise ModelFileError(f"{label} is {'a folder' if Path(path).is_dir() else 'missing'}, not a Wrangler "
                                 f"model. {fix}")
        try:
            model = joblib.load(Path(path))
        except Exception as e:  # noqa: BLE001 - unpickling other bytes fails in any way at all
            raise ModelFileError(f"{label} is not a joblib model ({type(e).__name__}: "
                                 f"{' '.join(str(e).split())[:120]}). {fix}") from None
        if not isinstance(model, StragglerPredictor):
            raise ModelFileError(f"{label} holds a {type(model).__name__}, not a Wrangler model. {fix}")
        return model

    def _scale(self, X: np.ndarray) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nan_to_num(self.scaler_.transform(X), nan=0.0)
