"""Loss and runtime prediction (spec 3.3, 3.4, 9.1.3-4): synthetic traces, no Spark.

Error metric throughout: ``reduction_error`` = |L_pred - L_true| / (L_0 - L_true), the relative error
of the predicted cumulative loss reduction; the thesis's bar is < 5% ten iterations ahead.
"""

import numpy as np
import pytest

from spark_plugin.slaq import (LossHistory, LossPredictor, RuntimeModel, epoch_curve, exponential, reduction_error,
                               sublinear)

TRACES = {
    "sublinear 1/k": lambda k: 5 / (k + 3) + 0.7,
    "sublinear 1/k^2": lambda k: 5 / (0.1 * k * k + k + 3) + 0.7,
    "exponential 0.85^k": lambda k: 2 * 0.85 ** k + 0.3,
    "exponential 0.95^k": lambda k: 10 * 0.95 ** k + 1,
}


def trace(fn, n=80, noise=0.0, seed=0):
    losses = np.array([fn(k) for k in range(1, n + 1)])
    rng = np.random.default_rng(seed)
    return losses + noise * (losses[0] - losses[-1]) * rng.standard_normal(n)


def history_of(losses, upto=None):
    h = LossHistory()
    for k, loss in enumerate(losses[:upto], start=1):
        h.record(k, float(loss))
    return h


def errors(losses, horizon, predictor=None):
    """Fit and strawman errors ``horizon`` ahead, from cut points 10, 15, ..., 55."""
    predictor = predictor or LossPredictor()
    fit, straw = [], []
    for cut in range(10, 60, 5):
        f = predictor.forecast(history_of(losses, cut))
        truth = losses[cut + horizon - 1]
        fit.append(reduction_error(losses[0], truth, float(f.loss(horizon))))
        last_drop = max(losses[cut - 2] - losses[cut - 1], 0)
        straw.append(reduction_error(losses[0], truth, losses[cut - 1] - horizon * last_drop))
    return np.mean(fit), np.mean(straw)


@pytest.mark.parametrize("name", TRACES)
@pytest.mark.parametrize("noise", [0.0, 0.002])
def test_error_ten_iterations_ahead_is_below_five_percent(name, noise):
    fit_error, _ = errors(trace(TRACES[name], noise=noise, seed=6), 10)
    assert fit_error < 0.05


@pytest.mark.parametrize("name", TRACES)
def test_on_noise_free_traces_even_the_ten_iteration_reduction_itself_is_within_five_percent(name):
    losses = trace(TRACES[name])
    for cut in (10, 25, 50):
        f = LossPredictor().forecast(history_of(losses, cut))
        true_drop = losses[cut - 1] - losses[cut + 9]
        assert float(f.reduction(10)) * f.scale == pytest.approx(true_drop, rel=0.05)


@pytest.mark.parametrize("name", TRACES)
def test_strawman_error_grows_with_the_horizon_and_the_fit_beats_it_at_5_and_10(name):
    losses = trace(TRACES[name], noise=0.001, seed=1)
    straw = [errors(losses, h)[1] for h in (1, 5, 10)]
    assert straw[0] < straw[1] < straw[2]
    for h in (5, 10):
        fit_error, straw_error = errors(losses, h)
        assert fit_error < straw_error


@pytest.mark.parametrize("name,family", [("sublinear 1/k", "sublinear"), ("sublinear 1/k^2", "sublinear"),
                                         ("exponential 0.85^k", "exponential"), ("exponential 0.95^k", "exponential")])
def test_auto_picks_the_family_the_trace_came_from(name, family):
    assert LossPredictor().forecast(history_of(trace(TRACES[name]), 30)).method == family


def test_a_declared_family_is_the_only_one_fitted():
    h = history_of(trace(TRACES["sublinear 1/k"]), 30)
    assert LossPredictor("exponential").forecast(h).method == "exponential"


def test_thesis_form_parameters_reproduce_the_fitted_curve():
    for name, fn in TRACES.items():
        f = LossPredictor().forecast(history_of(trace(fn), 40))
        k = np.arange(30.0, 60.0)
        family = sublinear if f.method == "sublinear" else exponential
        np.testing.assert_allclose(family(k, *f.fit.params), f.fit(k), rtol=1e-6, err_msg=name)
        assert f.floor == pytest.approx(f.fit.params[-1])
    f = LossPredictor().forecast(history_of(trace(TRACES["exponential 0.85^k"]), 40))
    assert f.fit.params[0] == pytest.approx(0.85) and f.floor == pytest.approx(0.3)


def test_forecasts_are_the_same_for_a_loss_scaled_by_1000():
    losses = trace(TRACES["sublinear 1/k"], noise=0.002, seed=3)
    a = LossPredictor().forecast(history_of(losses, 30))
    b = LossPredictor().forecast(history_of(1000 * losses + 7, 30))
    ahead = np.arange(0.0, 20.0)
    np.testing.assert_allclose(a.reduction(ahead), b.reduction(ahead), rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(a.normalized_loss(ahead), b.normalized_loss(ahead), rtol=1e-5, atol=1e-9)


def test_short_histories_use_the_strawman_repeating_the_last_drop():
    f = LossPredictor().forecast(history_of([10.0, 6.0, 4.0, 3.0]))  # 4 < min_points
    assert f.method == "strawman"
    assert float(f.loss(3)) == 0.0  # 3 - 3 * 1
    assert float(f.reduction(2)) == pytest.approx(2 * 1 / 4)  # in units of the largest drop, 4
    assert f.floor == pytest.approx(3.0 - 1.0 * 3)  # 1/k tail: last drop times iterations so far


def test_non_monotone_histories_fall_back_without_crashing():
    rng = np.random.default_rng(0)
    noisy = 1.0 + 0.1 * rng.standard_normal(40)
    f = LossPredictor().forecast(history_of(noisy))
    assert f.method == "strawman"
    assert np.all(np.isfinite(f.reduction(np.arange(10.0))))
    assert np.all(f.reduction(np.arange(10.0)) >= 0)
    rising = LossPredictor().forecast(history_of(np.linspace(1, 2, 20)))
    assert rising.method == "prior"  # never decreased: the optimistic cold start


def test_cold_start_prior_is_one_largest_drop_per_iteration_and_a_new_job_is_at_one():
    for h in (LossHistory(), history_of([3.0]), history_of([3.0, 3.0])):
        f = LossPredictor().forecast(h)
        assert f.method == "prior"
        assert f.reduction(np.array([0.0, 1.0, 2.5])).tolist() == [0.0, 1.0, 2.5]
        assert float(f.normalized_loss(0)) == 1.0 and float(f.normalized_loss(1)) == 0.5


def test_forecasts_are_cached_per_report_count_and_refitted_on_a_new_report():
    p, h = LossPredictor(), history_of(trace(TRACES["exponential 0.85^k"]), 20)
    first = p.forecast(h)
    assert p.forecast(h) is first
    h.record(21, float(TRACES["exponential 0.85^k"](21)))
    assert p.forecast(h) is not first and p.forecast(h).k_last == 21


def test_predictor_parameters_are_checked_when_used_not_when_stored():
    p = LossPredictor("cubic")
    with pytest.raises(ValueError, match="'family' parameter of LossPredictor must be one of"):
        p.forecast(LossHistory())
    with pytest.raises(ValueError, match="'decay' parameter of LossPredictor must be a finite number in \\(0, 1\\]"):
        LossPredictor(decay=1.5).forecast(LossHistory())


def test_runtime_model_learns_c_from_cpu_time_and_predicts_c_s_over_n():
    rng = np.random.default_rng(2)
    model = RuntimeModel()
    for _ in range(200):
        model.update(0.05 * 800 * (1 + 0.05 * rng.standard_normal()), data_size=800)
    assert model.c_ == pytest.approx(0.05, rel=0.05)
    assert model.iteration_time(8) == pytest.approx(0.05 * 800 / 8, rel=0.05)
    np.testing.assert_allclose(model.iterations(np.array([1, 2, 4]), epoch_s=2.0),
                               2.0 * np.array([1, 2, 4]) / (model.c_ * 800))
    assert model.iteration_time(0) == np.inf and model.iterations(0, 2.0) == 0.0


def test_runtime_model_tracks_a_change_of_c_and_relearns_from_a_history():
    model = RuntimeModel(smoothing=0.5)
    for cpu in [2.0] * 10 + [4.0] * 10:
        model.update(cpu)
    assert model.c_ == pytest.approx(4.0, rel=1e-3)
    h = LossHistory()
    for k, cpu in enumerate([3.0, 3.0, None, 3.0]):
        h.record(k, 1.0 / (k + 1), cpu_time_s=cpu, data_size=None if cpu is None else 1.5)
    again = RuntimeModel().fit(h)
    assert again.c_ == pytest.approx(2.0) and again.n_samples_ == 3 and again.data_size_ == 1.5


def test_runtime_model_with_ipso_scaling_learns_an_overhead_that_grows_with_the_cores():
    # wall = 0.2 + 0.05 N + 4 / N with 4 CPU seconds per iteration: linear keeps one overhead for every count
    linear, ipso = RuntimeModel(smoothing=1.0, scaling="linear"), RuntimeModel(smoothing=1.0)
    for cores in [1, 2, 4] * 3:
        for model in (linear, ipso):
            model.update(4.0, wall_s=0.2 + 0.05 * cores + 4.0 / cores, cores=cores)
    assert ipso.overhead_s_ == pytest.approx(0.2) and ipso.scale_out_s_ == pytest.approx(0.05)
    assert ipso.iteration_time(8) == pytest.approx(0.2 + 0.4 + 0.5)
    assert linear.scale_out_s_ == 0.0 and linear.iteration_time(8) == pytest.approx(0.4 + 0.5)  # the last overhead
    assert ipso.overheads_ == pytest.approx({1: 0.25, 2: 0.3, 4: 0.4})


def test_runtime_model_with_ipso_scaling_is_linear_until_two_core_counts_ran_and_never_negative():
    ipso = RuntimeModel(smoothing=1.0, scaling="ipso").update(2.0, wall_s=1.5, cores=2)
    assert ipso.scale_out_s_ == 0.0 and ipso.iteration_time(4) == pytest.approx(0.5 + 0.5)
    ipso.update(2.0, wall_s=2.0 / 4 + 0.1, cores=4)  # the overhead fell with more cores: no negative q
    assert ipso.scale_out_s_ == 0.0 and ipso.overhead_s_ == pytest.approx(0.3)
    with pytest.raises(ValueError, match="'scaling' parameter of RuntimeModel must be one of"):
        RuntimeModel(scaling="amdahl").update(1.0)


def test_runtime_model_prior_and_errors():
    assert RuntimeModel(prior_cpu_s=3.0).iteration_time(3) == 1.0
    with pytest.raises(ValueError, match="cpu_time_s must be a finite number > 0. Got 0"):
        RuntimeModel().update(0.0)
    with pytest.raises(ValueError, match="'smoothing' parameter of RuntimeModel"):
        RuntimeModel(smoothing=0.0).update(1.0)


def test_epoch_curve_turns_cores_into_monotone_predictions():
    h = history_of(trace(TRACES["sublinear 1/k"]), 30)
    f, runtime = LossPredictor().forecast(h), RuntimeModel(prior_cpu_s=4.0)
    n = np.arange(0, 33)
    gain = epoch_curve(f, runtime, 2.0)(n)
    level = epoch_curve(f, runtime, 2.0, objective="loss")(n)
    assert gain[0] == 0.0 and np.all(np.diff(gain) > 0)
    assert np.all(np.diff(gain) <= np.diff(gain)[0] + 1e-12)  # diminishing returns per core
    assert level[0] == pytest.approx(float(f.normalized_loss(0))) and np.all(np.diff(level) < 0)
    assert gain[4] == pytest.approx(float(f.reduction(2.0)))  # 4 cores * 2 s / 4 cpu-s = 2 iterations
    with pytest.raises(ValueError, match="epoch_s must be a finite number of seconds > 0"):
        epoch_curve(f, runtime, 0.0)
    with pytest.raises(ValueError, match="objective must be 'reduction' or 'loss'"):
        epoch_curve(f, runtime, 1.0, objective="accuracy")


def test_reduction_error_is_unit_free():
    assert reduction_error(10.0, 2.0, 2.4) == pytest.approx(0.05)
    assert reduction_error(10_000.0, 2_000.0, 2_400.0) == pytest.approx(0.05)
    assert np.isnan(reduction_error(1.0, 1.0, 0.9))


def test_a_job_whose_loss_stopped_moving_is_predicted_to_gain_nothing():
    # Lloyd's iterations on separated clusters: big drops, then the same loss once assignments settle.
    history = LossHistory()
    for k, loss in enumerate([40.0, 12.0, 6.0, 5.2, 5.05, 5.01, 5.01]):
        history.record(k, loss)
    forecast = LossPredictor().forecast(history)
    assert forecast.method == "converged" and forecast.floor == 5.01
    assert float(forecast.reduction(10)) == 0.0 and float(forecast.loss(10)) == 5.01
    history.record(7, 4.0)  # it moved again: predictions resume
    assert LossPredictor().forecast(history).method != "converged"
