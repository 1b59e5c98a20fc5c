"""Wrangler's scheduling rule (Algorithm 1, spec §6): which executors to hold now.

An executor is *flagged* while its SVM score is positive and its calibrated
confidence exceeds p. Flagged executors are held, most confident first, but never
all of them: at least one live executor always stays open, so pending tasks can
always run (the thesis's all-flagged state A, which it only observed never to
happen, is ruled out here). Holding is the only action: nothing is killed or
duplicated.
"""

from __future__ import annotations

import numpy as np


def is_flagged(score, confidence, p: float):
    """Whether a prediction flags its node: ``score > 0 and confidence > p`` (element-wise)."""
    return np.logical_and(np.asarray(score) > 0, np.asarray(confidence) > p)


def choose_holds(predictions: dict, p: float, live: set) -> list:
    """Executors to hold, most confident first.

    Parameters
    ----------
    predictions : dict of str to (float, float)
        ``executor id -> (score, confidence)`` for executors with a fresh sample.
    p : float
        Confidence threshold.
    live : set of str
        Executors currently alive; at most ``len(live) - 1`` are held.

    Examples
    --------
    >>> choose_holds({"1": (0.4, 0.9), "2": (0.2, 0.8), "3": (-1.0, 0.1)}, 0.7, {"1", "2", "3"})
    ['1', '2']
    >>> choose_holds({"1": (0.4, 0.9), "2": (0.2, 0.8)}, 0.7, {"1", "2"})
    ['1']
    """
    flagged = [(conf, ex) for ex, (score, conf) in predictions.items()
               if ex in live and is_flagged(score, conf, p)]
    flagged.sort(key=lambda ce: (-ce[0], ce[1]))
    return [ex for _, ex in flagged[:max(0, len(live) - 1)]]
