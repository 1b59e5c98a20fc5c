"""A linear SVM with a Platt-calibrated confidence: Wrangler's per-node classifier (spec §4-5).

The SVM is trained on oversampled (1:1) rows; its score ``w·x + b`` is positive
for "straggler". The confidence is a sigmoid of that score fitted on a
*temporally held-out* fold that is oversampled too (spec §10), so that a
threshold p around 0.7 keeps the thesis's meaning under a balanced prior. The
sigmoid is monotone in the score, so a higher score never lowers confidence.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
from sklearn.calibration import CalibratedClassifierCV
from sklearn.exceptions import ConvergenceWarning
from sklearn.frozen import FrozenEstimator
from sklearn.svm import LinearSVC

from .sampling import oversample

log = logging.getLogger(__name__)


def _has_both_classes(y) -> bool:
    return len(np.unique(y)) == 2


class CalibratedSVM:
    """Linear hinge-loss SVM plus a sigmoid calibration of its score.

    Parameters
    ----------
    C : float, default=1.0
        Inverse regularisation strength of ``LinearSVC`` (``C = 1/(2λ)``).
    random_state : int, default=0
        Seed of the oversampling draw.

    Attributes
    ----------
    svm_ : sklearn.svm.LinearSVC
    calibrator_ : sklearn.calibration.CalibratedClassifierCV
    calibrated_on_ : {"validation", "training"}
        Where the sigmoid was fitted: the held-out fold, or the training rows when
        that fold lacked a class.
    """

    def __init__(self, *, C: float = 1.0, random_state: int = 0):
        self.C = C
        self.random_state = random_state

    def fit(self, X, y, X_cal=None, y_cal=None) -> "CalibratedSVM":
        """Fit the SVM on ``X, y`` and its sigmoid on ``X_cal, y_cal``.

        Raises
        ------
        ValueError
            If ``y`` holds a single class (nothing to separate).
        """
        if not _has_both_classes(y):
            raise ValueError(f"Training rows need both stragglers and non-stragglers; got only class "
                             f"{np.unique(y).tolist()} in {len(y)} rows. Train on a longer window, or lower beta.")
        Xb, yb = oversample(X, y, random_state=self.random_state)
        with warnings.catch_warnings():
            # liblinear's dual solver converges slowly on duplicated rows; held-out accuracy is what counts.
            warnings.simplefilter("ignore", ConvergenceWarning)
            self.svm_ = LinearSVC(loss="hinge", C=self.C, dual=True, max_iter=20_000,
                                  random_state=self.random_state).fit(Xb, yb)
        self.calibrated_on_ = "validation"
        if y_cal is None or not _has_both_classes(y_cal):
            log.info("Calibration fold lacks a class; fitting the sigmoid on the training rows instead")
            X_cal, y_cal, self.calibrated_on_ = X, y, "training"
        Xc, yc = oversample(X_cal, y_cal, random_state=self.random_state)
        self.calibrator_ = CalibratedClassifierCV(FrozenEstimator(self.svm_), method="sigmoid").fit(Xc, yc)
        return self

    def decision_function(self, X) -> np.ndarray:
        """SVM scores; positive means straggler."""
        return self.svm_.decision_function(X)

    def confidence(self, X) -> np.ndarray:
        """Calibrated probability that a task launched now straggles."""
        return self.calibrator_.predict_proba(X)[:, 1]

    def sigmoids(self) -> list:
        """The calibrators as ``[a, b]`` pairs: confidence = mean of 1 / (1 + exp(a * score + b))."""
        return [[float(c.calibrators[0].a_), float(c.calibrators[0].b_)]
                for c in self.calibrator_.calibrated_classifiers_]


class Abstaining:
    """A node model that ranked its own held-out rows no better than chance: it never flags its node.

    Its score is -1 for every row (zero weights, intercept -1, so the driver JVM scores it alike from the
    exported JSON) and its confidence is what the fitted model's sigmoid makes of that score. Without it, a
    node whose stragglers are ordinary variation (no counter foretells them) keeps a model that flags at
    random: on the emulated hosts a quiet node's model (held-out ROC AUC 0.59) flagged 71% of its tasks
    at p = 0.7, and its holds made Wrangler's job p99 worse than doing nothing.

    Attributes
    ----------
    fitted : CalibratedSVM
        The model it replaces (kept for its C and its calibration).
    auc : float
        That model's ROC AUC on the node's calibration rows.
    """

    SCORE = -1.0

    def __init__(self, fitted: CalibratedSVM, auc: float):
        self.fitted, self.auc, self.C = fitted, auc, fitted.C

    def sigmoids(self) -> list:
        """The fitted model's calibrators (:meth:`CalibratedSVM.sigmoids`), applied to the constant score."""
        return self.fitted.sigmoids()

    def decision_function(self, X) -> np.ndarray:
        return np.full(len(X), self.SCORE)

    def confidence(self, X) -> np.ndarray:
        value = np.mean([1 / (1 + np.exp(a * self.SCORE + b)) for a, b in self.sigmoids()])
        return np.full(len(X), value)
