"""The multi-task model f_{0,n,l}: shared, per-node and per-workload weights (spec §7.4).

``w(n, l) = w_0 + w_n + w_l`` is learned by one ordinary linear SVM on augmented
features: each row becomes ``[x ; √N·x in block n ; √L·x in block l]`` (zeros in
the other blocks), the Evgeniou-Pontil reduction with every λ equal to 1, hence
``C = 1/(2λ) = 0.5``. A node or workload unseen in training gets a zero block, so
its prediction falls back to ``w_0 + w_l`` (or ``w_0 + w_n``): the reason to use it
for nodes with little data. Needs (N + L)·d weights instead of N·L·d.
"""

from __future__ import annotations

import numpy as np

from .model import CalibratedSVM


def augment(X: np.ndarray, node_index: np.ndarray, workload_index: np.ndarray, n_nodes: int,
            n_workloads: int) -> np.ndarray:
    """The feature map φ; an index of -1 (unseen) leaves its block empty.

    Examples
    --------
    >>> augment(np.array([[1.0, 2.0]]), np.array([1]), np.array([0]), 2, 1).round(3).tolist()
    [[1.0, 2.0, 0.0, 0.0, 1.414, 2.828, 1.0, 2.0]]
    """
    n, d = X.shape
    out = np.zeros((n, d * (1 + n_nodes + n_workloads)))
    out[:, :d] = X
    for index, count, offset in ((node_index, n_nodes, 1), (workload_index, n_workloads, 1 + n_nodes)):
        for group in range(count):
            rows = index == group
            out[rows, (offset + group) * d:(offset + group + 1) * d] = np.sqrt(count) * X[rows]
    return out


class MultiTaskSVM:
    """f_{0,n,l} over nodes and workloads, with a calibrated confidence.

    Parameters
    ----------
    random_state : int, default=0

    Attributes
    ----------
    node_ids_, workload_ids_ : list of str
        Nodes and workloads seen in training, in block order.
    model_ : CalibratedSVM
        The SVM over augmented features.
    """

    C = 0.5  # λ0 = ν = ω = 1 (spec §7.3) with LinearSVC's ½‖w‖² + C·Σ hinge

    def __init__(self, *, random_state: int = 0):
        self.random_state = random_state

    def fit(self, X, y, nodes, workloads, X_cal=None, y_cal=None, nodes_cal=None, workloads_cal=None):
        """Fit on training rows and calibrate on the held-out rows (see :class:`CalibratedSVM`)."""
        self.node_ids_ = sorted(set(nodes))
        self.workload_ids_ = sorted(set(workloads))
        cal = None if X_cal is None or not len(X_cal) else self._phi(X_cal, nodes_cal, workloads_cal)
        self.model_ = CalibratedSVM(C=self.C, random_state=self.random_state).fit(
            self._phi(X, nodes, workloads), y, cal, y_cal if cal is not None else None)
        return self

    def decision_function(self, X, nodes, workloads) -> np.ndarray:
        return self.model_.decision_function(self._phi(X, nodes, workloads))

    def confidence(self, X, nodes, workloads) -> np.ndarray:
        return self.model_.confidence(self._phi(X, nodes, workloads))

    def weights(self, node: str, workload: str) -> tuple[np.ndarray, float]:
        """The effective ``(w_0 + w_n + w_l, b)`` in the original feature space."""
        w = self.model_.svm_.coef_[0]
        d = len(w) // (1 + len(self.node_ids_) + len(self.workload_ids_))
        total = w[:d].copy()
        for ids, offset, name in ((self.node_ids_, 1, node), (self.workload_ids_, 1 + len(self.node_ids_), workload)):
            if name in ids:
                block = offset + ids.index(name)
                total += np.sqrt(len(ids)) * w[block * d:(block + 1) * d]
        return total, float(self.model_.svm_.intercept_[0])

    def _phi(self, X, nodes, workloads) -> np.ndarray:
        return augment(np.asarray(X, dtype=float), _indices(nodes, self.node_ids_),
                       _indices(workloads, self.workload_ids_), len(self.node_ids_), len(self.workload_ids_))


def _indices(names, known: list) -> np.ndarray:
    lookup = {name: i for i, name in enumerate(known)}
    return np.array([lookup.get(n, -1) for n in names], dtype=int)
