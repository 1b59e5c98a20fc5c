"""Keras-Tuner-compatible hyper-parameters and objectives: registration, sampling, distances, errors."""

from __future__ import annotations

import math
import random

import pytest

from tf_packing import HyperbandOracle, HyperParameters, Objective, index_distance
from tf_packing.tuner.hyperband import TABLE_2_3, search_space_size
from tf_packing.tuner.objective import objective_of


def space():
    hp = HyperParameters()
    hp.Int("units", 32, 256, step=32)
    hp.Float("lr", 1e-5, 1e-1, sampling="log")
    hp.Choice("act", ["relu", "tanh"])
    hp.Boolean("bn")
    hp.Fixed("layers", 2)
    return hp


def test_calls_register_once_and_return_the_configurations_values():
    hp = space()
    assert hp.values == {"units": 32, "lr": 1e-5, "act": "relu", "bn": False, "layers": 2}  # defaults
    trial = hp.copy({"units": 128, "lr": 0.01, "act": "tanh", "bn": True, "layers": 2})
    assert trial.Int("units", 32, 256, step=32) == 128 and trial["lr"] == 0.01 and trial.get("act") == "tanh"
    with pytest.raises(ValueError, match="'units' is registered twice with different ranges"):
        trial.Int("units", 1, 8)
    with pytest.raises(KeyError, match="hyper-parameter 'depth' is not defined"):
        trial.get("depth")


def test_log_sampling_spreads_over_the_decades_and_ranges_hold():
    hp, rng = space(), random.Random(0)
    draws = [hp.sample(rng) for _ in range(2000)]
    lrs = [d["lr"] for d in draws]
    assert all(1e-5 <= v <= 1e-1 for v in lrs)
    per_decade = [sum(10 ** (e - 1) < v <= 10 ** e for v in lrs) for e in (-4, -3, -2, -1)]
    assert min(per_decade) > 400  # 500 expected in each of the 4 decades; linear sampling puts 90% in the last
    assert {d["units"] for d in draws} == {32, 64, 96, 128, 160, 192, 224, 256}
    assert {d["bn"] for d in draws} == {False, True} and {d["layers"] for d in draws} == {2}
    reverse = HyperParameters()
    reverse.Float("momentum", 0.001, 0.999, sampling="reverse_log")
    near_top = sum(reverse.sample(rng)["momentum"] > 0.9 for _ in range(1000))
    assert near_top > 600  # reverse_log crowds toward the maximum (2/3 expected; linear: 1/10)


def test_finite_uniform_spaces_are_cross_products_sampled_without_replacement():
    assert search_space_size(TABLE_2_3) == 1056 and space().size() is None
    grid = HyperParameters()
    grid.Int("units", 1, 4)
    grid.Choice("act", ["a", "b", "c"])
    assert grid.size() == 12 and grid.config_at(11) == {"units": 4, "act": "c"}
    oracle = HyperbandOracle(grid, max_epochs=9, factor=3, seed=0)
    sampled = [tuple(t.config.values()) for t in oracle.next_rung().trials]
    assert len(sampled) == 9 and len(set(sampled)) == 9
    continuous = HyperbandOracle(space(), max_epochs=9, factor=3, seed=0)
    configs = [t.config for t in continuous.next_rung().trials]
    assert len({c["lr"] for c in configs}) == 9


def test_conditional_parameters_are_active_only_under_their_parent():
    hp = HyperParameters()
    kind = hp.Choice("kind", ["mlp", "cnn"])
    with hp.conditional_scope("kind", ["cnn"]):
        filters = hp.Int("filters", 8, 64)
    assert kind == "mlp" and filters is None and "filters" not in hp.values
    rng = random.Random(1)
    draws = [hp.sample(rng) for _ in range(50)]
    assert all(("filters" in d) == (d["kind"] == "cnn") for d in draws) and hp.size() is None
    assert hp.copy({"kind": "cnn", "filters": 16}).get("filters") == 16


def test_the_packing_distance_counts_grid_steps_of_ranges_and_inactive_parameters():
    hp = space()
    a = {"units": 32, "lr": 1e-5, "act": "relu", "bn": False, "layers": 2}
    b = {**a, "units": 96, "lr": 1e-3, "act": "tanh"}
    assert index_distance(a, b, hp) == pytest.approx(2 + 5 + 1)  # 2 steps, half the log range (grid 10), 1
    assert index_distance(a, {**a, "extra": 1}, hp) == 1


@pytest.mark.parametrize("bad, message", [
    (lambda hp: hp.Int("n", 1.5, 4), "hp.Int\\('n'\\) min_value must be an integer"),
    (lambda hp: hp.Float("lr", 0.0, 1.0, sampling="log"), "sampling='log' needs min_value > 0"),
    (lambda hp: hp.Float("lr", 1.0, 0.1), "needs min_value <= max_value"),
    (lambda hp: hp.Choice("c", []), "needs at least one value"),
    (lambda hp: hp.Choice("c", ["a", 1]), "values must all be of one type"),
    (lambda hp: hp.Int("n", 1, 4, default=9), "default 9 is outside its range"),
    (lambda hp: hp.Float("lr", 1e-3, 1.0, sampling="cubic"), "sampling must be one of"),
])
def test_bad_declarations_name_the_parameter(bad, message):
    with pytest.raises((TypeError, ValueError), match=message):
        bad(HyperParameters())


def test_objectives_by_name_infer_their_direction_or_say_what_to_pass():
    assert objective_of("val_loss") == Objective("val_loss", "min")
    assert objective_of("val_accuracy").direction == "max" and objective_of("val_auc").direction == "max"
    assert objective_of("val_mean_absolute_error").direction == "min"
    with pytest.raises(ValueError, match=r"cannot tell whether objective 'val_score' should go up or down. Pass "
                                         r"tf_packing.Objective\('val_score', 'max'\)"):
        objective_of("val_score")
    with pytest.raises(ValueError, match="direction must be 'max' or 'min'"):
        Objective("val_score", "up")
    assert Objective("val_loss", "min").better(0.1, 0.2) and Objective("val_loss", "min").worst == math.inf
