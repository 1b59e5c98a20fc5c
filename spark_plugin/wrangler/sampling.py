"""Balancing classes by oversampling the minority (the thesis's fix for rare stragglers).

An SVM trained on data with few stragglers predicts "no straggler" for everything
(spec §4). Wrangler duplicates randomly chosen minority rows until both classes
are equally frequent; the original rows are all kept.
"""

from __future__ import annotations

import numpy as np


def oversample(X: np.ndarray, y: np.ndarray, *, random_state: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Return ``X, y`` plus minority rows drawn with replacement until the classes are 1:1.

    The original rows come first and in order. With a single class, nothing is added.

    Examples
    --------
    >>> X, y = oversample(np.arange(5).reshape(5, 1), np.array([0, 0, 0, 1, 0]))
    >>> np.bincount(y).tolist(), X[:5, 0].tolist()
    ([4, 4], [0, 1, 2, 3, 4])
    """
    counts = np.bincount(y, minlength=2)
    if counts.min() == 0 or counts[0] == counts[1]:
        return X, y
    minority = int(np.argmin(counts))
    rng = np.random.default_rng(random_state)
    extra = rng.choice(np.flatnonzero(y == minority), size=int(counts.max() - counts.min()), replace=True)
    return np.concatenate([X, X[extra]]), np.concatenate([y, y[extra]])
