"""The scheduling rule: flag only when score > 0 and confidence > p; never hold every executor."""

import numpy as np

from spark_plugin.wrangler import choose_holds, is_flagged


def test_a_node_is_flagged_only_with_a_positive_score_and_confidence_above_p():
    assert is_flagged([0.1, 0.1, -0.1, 0.1], [0.71, 0.7, 0.99, 0.2], 0.7).tolist() == [True, False, False, False]
    assert is_flagged(np.array([0.1, -0.1]), np.array([0.2, 0.9]), 0.0).tolist() == [True, False]


def test_holds_go_to_the_most_confident_live_executors_and_one_always_stays_open():
    preds = {"1": (1.0, 0.95), "2": (0.5, 0.80), "3": (0.2, 0.75), "4": (0.9, 0.6)}
    assert choose_holds(preds, 0.7, {"1", "2", "3", "4"}) == ["1", "2", "3"]
    assert choose_holds(preds, 0.7, {"1", "2", "3"}) == ["1", "2"]
    assert choose_holds(preds, 0.7, {"2", "3"}) == ["2"]
    assert choose_holds(preds, 0.7, {"1"}) == []
    assert choose_holds(preds, 0.9, {"1", "2", "3", "4"}) == ["1"]
    assert choose_holds(preds, 0.7, {"5", "6"}) == []  # predictions for executors no longer alive
