"""VideoStorm's utility templates and its model-predictive lag with the demand correction."""

import numpy as np
import pytest

from spark_plugin.shared.utility import TEMPLATES, DemandCorrection, Utility, predicted_lag


def test_quality_above_the_floor_earns_and_lag_past_the_limit_costs():
    u = Utility(min_quality=0.6, max_lag_s=60, alpha_quality=10, alpha_lag=0.5, base=1)
    assert u(0.5, 30) == 1.0  # below the floor, within the lag: the base
    assert u(0.8, 30) == pytest.approx(3.0)
    assert u(0.8, 100) == pytest.approx(3.0 - 20)
    assert np.allclose(u(np.array([0.6, 0.7]), np.array([0, 70])), [1.0, 1.0 + 1.0 - 5.0])
    assert Utility()(0.3, 1e9) == pytest.approx(0.3)  # no lag limit: lag never costs


def test_the_nine_templates_cross_three_floors_with_three_lag_limits():
    assert len(TEMPLATES) == 9
    assert TEMPLATES["q80-lag1m"] == Utility(min_quality=0.8, max_lag_s=60.0)
    assert {u.min_quality for u in TEMPLATES.values()} == {0.4, 0.6, 0.8}
    assert {u.max_lag_s for u in TEMPLATES.values()} == {60.0, 600.0, 3600.0}


def test_bad_utilities_are_refused_naming_the_field():
    with pytest.raises(ValueError, match="min_quality must be a fraction in \\[0, 1\\]. Got 60"):
        Utility(min_quality=60)
    with pytest.raises(ValueError, match="alpha_lag must be >= 0"):
        Utility(alpha_lag=-1)


def test_the_corrected_prediction_follows_a_job_whose_demand_was_underestimated():
    true_demand, predicted_demand, horizon = 6.0, 4.0, 5.0
    mu = DemandCorrection(window=3)
    lag = 0.0
    for _ in range(4):  # the job really falls behind at 1 - a / 6 per second with a = 4 units
        actual_next = lag + horizon - horizon * 4 / true_demand
        mu.update(actual=true_demand, predicted=predicted_demand)
        assert predicted_lag(lag, horizon, 4, predicted_demand, mu.mu) == pytest.approx(actual_next)
        lag = actual_next
    assert predicted_lag(lag, horizon, 4, predicted_demand) < lag + horizon - horizon * 4 / true_demand
    assert mu.mu == pytest.approx(1.5)


def test_lag_never_goes_below_zero_and_bad_horizons_are_refused():
    assert np.allclose(predicted_lag(1.0, 10.0, np.array([0, 4, 40]), demand=4), [11.0, 1.0, 0.0])
    with pytest.raises(ValueError, match="demand > 0"):
        predicted_lag(0.0, 1.0, 1, demand=0)
    with pytest.raises(ValueError, match="window must be >= 1"):
        DemandCorrection(window=0)
