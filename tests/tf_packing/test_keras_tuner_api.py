"""The tuner as a Keras Tuner user meets it: build_fn(hp), objectives, callbacks, resume, results, NaN scores."""

from __future__ import annotations

import math

import numpy as np
import pytest


def build(hp):
    """A Keras Tuner style build_fn: ranges with log sampling, a choice and a boolean."""
    import keras

    layers = [keras.Input((64,)), keras.layers.Dense(hp.Int("units", 8, 32, step=8), activation="relu")]
    if hp.Boolean("dropout"):
        layers.append(keras.layers.Dropout(0.1))
    model = keras.Sequential(layers + [keras.layers.Dense(10, activation="softmax")])
    opt = {"adam": keras.optimizers.Adam, "sgd": keras.optimizers.SGD}[hp.Choice("optimizer", ["adam", "sgd"])]
    model.compile(opt(hp.Float("learning_rate", 1e-4, 1e-1, sampling="log")), "sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


def tuner(**kw):
    from tf_packing import Tuner

    return Tuner(build, **{"objective": "val_accuracy", "max_epochs": 3, "factor": 3, "seed": 0, "progress": False,
                           **kw})


class CountEpochs:
    """A Keras callback class counting epoch ends over every copy (the tuner copies callbacks per trial)."""

    @staticmethod
    def make(raise_after=None):
        import keras

        class Counter(keras.callbacks.Callback):
            seen: list = []

            def on_epoch_end(self, epoch, logs=None):
                Counter.seen.append(dict(logs or {}))
                if raise_after is not None and len(Counter.seen) == raise_after:
                    raise KeyboardInterrupt("simulated crash")

        return Counter


@pytest.fixture(scope="module")
def plain_search(tf_det, digits):
    """``tuner()``'s search, no callbacks: the result several tests check or compare with, run once per module."""
    x, y, xv, yv = digits
    return tuner().search(x, y, validation_data=(xv, yv))


def test_build_fn_with_hp_ranges_searches_the_space_it_registers(plain_search, digits):
    _, _, xv, yv = digits
    t = plain_search
    names = [p.name for p in t.oracle_.space.space]
    assert names == ["units", "dropout", "optimizer", "learning_rate"]
    configs = [tr.config for tr in t.oracle_.trials_.values()]
    assert len(configs) == 5 and all(c["units"] in (8, 16, 24, 32) for c in configs)
    assert all(1e-4 <= c["learning_rate"] <= 1e-1 for c in configs)
    assert len({c["learning_rate"] for c in configs}) == 5  # continuous: every trial draws its own
    best = t.get_best_hyperparameters(1)[0]
    assert best.values == t.best_config_ and best["units"] == t.best_config_["units"]
    model = t.get_best_models(1)[0]
    accuracy = np.mean(model.predict(xv, verbose=0).argmax(1) == yv)
    assert accuracy == pytest.approx(t.best_score_)


def test_an_oracle_passed_as_keras_tuner_users_pass_one_runs_the_same_search(tf_det, digits):
    from tf_packing import HyperbandOracle

    x, y, xv, yv = digits
    own = tuner(max_epochs=3, factor=3, seed=1).search(x, y, validation_data=(xv, yv))
    oracle = HyperbandOracle(max_epochs=3, factor=3, seed=1)
    passed = tuner(max_epochs=81, factor=3, seed=0, oracle=oracle).search(x, y, validation_data=(xv, yv))
    assert passed.oracle_ is oracle and [p.name for p in oracle.space.space] == ["units", "dropout", "optimizer",
                                                                                 "learning_rate"]
    assert passed.results() == own.results() and passed.best_config_ == own.best_config_


@pytest.mark.parametrize("oracle, kw, message", [
    ("not an oracle", {}, r"^oracle must be a tf_packing.HyperbandOracle .* Got str\.$"),
    (dict(max_epochs=9), dict(max_epochs=27), r"^max_epochs=27 to the Tuner and 9 to the oracle: with an oracle, set "
                                              r"them on the oracle only\.$"),
    (dict(mode="min"), {}, r"^the oracle has mode='min' but objective 'val_accuracy' is to maximize: make it "
                           r"HyperbandOracle\(mode='max', \.\.\.\)\.$"),
])
def test_an_oracle_that_cannot_serve_the_search_is_refused_before_any_model_is_built(tf_det, oracle, kw, message):
    from spark_plugin.errors import UsageError
    from tf_packing import HyperbandOracle, Tuner

    def unbuilt(hp):
        raise AssertionError("a model was built before the oracle was checked")

    oracle = HyperbandOracle(**oracle) if isinstance(oracle, dict) else oracle
    with pytest.raises(UsageError, match=message):
        Tuner(unbuilt, oracle=oracle, **kw)


def test_objective_by_name_or_object_with_direction(tf_det, digits):
    from tf_packing import Objective

    x, y, xv, yv = digits
    by_loss = tuner(objective="val_loss").search(x, y, validation_data=(xv, yv))
    assert by_loss.objective.direction == "min"
    rows = by_loss.results()
    finished = [r["val_loss"] for r in rows if r["status"] == "completed"]
    assert finished == sorted(finished)  # lower is better: the best first
    assert by_loss.best_score_ == min(finished)

    class KerasTunerObjective:  # what keras_tuner.Objective looks like
        name, direction = "val_accuracy", "max"

    assert tuner(objective=KerasTunerObjective()).objective == Objective("val_accuracy", "max")


def test_callbacks_see_every_trials_validation_logs_and_can_stop_it(tf_det, digits):
    import keras

    x, y, xv, yv = digits
    counter = CountEpochs.make()
    stop = keras.callbacks.EarlyStopping(monitor="val_accuracy", patience=0, min_delta=1.0)  # stops after 2 epochs
    t = tuner().search(x, y, validation_data=(xv, yv), callbacks=[counter(), stop])
    assert counter.seen and all("val_accuracy" in logs and "val_loss" in logs for logs in counter.seen)
    assert len(counter.seen) == len(t.trace_)  # the tuner scored the same epoch ends
    assert max(t.oracle_.trials_[tid].epochs_done for tid in t.oracle_.trials_) == 3
    bracket0 = [len(t.curves_[tid]) for tid, trial in t.oracle_.trials_.items() if trial.bracket == 0]
    assert bracket0 == [2, 2]  # EarlyStopping ended their one 3-epoch fit after 2 epochs


def test_a_search_resumes_from_its_directory_with_the_same_results(plain_search, digits, tmp_path):
    """The crashed and resumed searches carry a callback; the reference is the uninterrupted search without one,
    which scores the same epochs (a callback only makes the tuner score every epoch, not differently)."""
    x, y, xv, yv = digits
    whole = plain_search
    crash = CountEpochs.make(raise_after=5)  # inside bracket 0, after bracket 1 was saved
    with pytest.raises(KeyboardInterrupt):
        tuner(directory=tmp_path, project_name="p").search(x, y, validation_data=(xv, yv), callbacks=[crash()])
    assert (tmp_path / "p" / "tuner.json").exists()
    resumed = tuner(directory=tmp_path, project_name="p")
    assert len(resumed.oracle_.trials_) == 3  # bracket 1's trials came back from the folder
    resumed.search(x, y, validation_data=(xv, yv), callbacks=[CountEpochs.make()()])
    assert [(r["trial"], r["status"]) for r in resumed.results()] == [(r["trial"], r["status"]) for r in whole.results()]
    assert np.allclose([r["val_accuracy"] for r in resumed.results()], [r["val_accuracy"] for r in whole.results()],
                       atol=1e-6)
    with pytest.raises(ValueError, match="holds a search with max_epochs=3, not 9. Pass overwrite=True"):
        tuner(directory=tmp_path, project_name="p", max_epochs=9)
    from tf_packing import HyperParameters, Tuner

    with pytest.raises(ValueError, match=r"holds a search by build_fn \S+\.build, not \S+\.build_wider\. Pass "
                                         r"overwrite=True to start afresh, or another project_name\.$"):
        Tuner(build_wider, objective="val_accuracy", max_epochs=3, seed=0, directory=tmp_path, project_name="p")
    extra = HyperParameters()
    extra.Fixed("batch_size", 16)
    with pytest.raises(ValueError, match=r"holds a search over another search space \('batch_size' is new\)\. "
                                         r"Pass overwrite=True"):
        tuner(directory=tmp_path, project_name="p", hyperparameters=extra)
    assert len(tuner(directory=tmp_path, project_name="p").oracle_.trials_) == 5  # its own: resumed, finished
    assert len(tuner(directory=tmp_path, project_name="p", overwrite=True).oracle_.trials_) == 0


def build_wider(hp):
    """Another build_fn: the same hyper-parameter names, a wider layer range."""
    import keras

    model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(hp.Int("units", 8, 64, step=8)),
                              keras.layers.Dense(10, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def test_a_rung_where_no_score_is_a_number_is_an_error_that_names_the_causes(tf_det, digits):
    import keras

    from tf_packing import Tuner

    def diverging(hp):  # the first step's gradients are NaN: every trial diverges at once
        model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(10),
                                  keras.layers.Lambda(lambda t: keras.ops.log(t - 1e9)),
                                  keras.layers.Dense(10, activation="softmax")])
        model.compile(keras.optimizers.SGD(hp.Float("learning_rate", 1e-3, 1e-1)), "sparse_categorical_crossentropy")
        return model

    x, y, xv, yv = digits
    with pytest.raises(ValueError, match=r"no trial of bracket 1 rung 0 scored a number for 'val_loss' \(all 3 NaN "
                                         r"or infinite\). Likely: every configuration diverged"):
        Tuner(diverging, objective="val_loss", max_epochs=3, progress=False).search(x, y, validation_data=(xv, yv))


def test_target_ends_the_search_at_the_first_trial_that_reaches_it(tf_det, digits):
    x, y, xv, yv = digits
    early = tuner(target=0.5).search(x, y, validation_data=(xv, yv))
    trial, seconds = early.target_reached_
    scores = [s for _, _, s in early.trace_]
    assert scores[-1] >= 0.5 and all(s < 0.5 for s in scores[:-1])  # it stopped at the first score that reached it
    assert early.best_score_ == scores[-1] and early.best_config_ == early.oracle_.trials_[trial].config
    assert len(scores) < early._planned_trial_epochs() and seconds <= early.search_time_


def test_hyperdrive_kills_trials_whose_curve_cannot_reach_the_best(tf_det, digits):
    from tf_packing import HyperDrive

    x, y, xv, yv = digits
    # max_epochs=7 and factor=7: two brackets, three rungs, and the 7-epoch trials past the boundary
    pop = tuner(max_epochs=7, factor=7, early_kill=HyperDrive(boundary=6)).search(x, y, validation_data=(xv, yv))
    killed = [t for t in pop.oracle_.trials_.values() if t.status == "killed"]
    assert killed and all(len(pop.curves_[t.trial_id]) >= 6 for t in killed)
    best = max(s for _, _, s in pop.trace_)
    assert all(max(pop.curves_[t.trial_id]) < best for t in killed)  # none of them was the best so far
    assert sum(map(len, pop.curves_.values())) < pop._planned_trial_epochs()  # the kills saved epochs
    assert all(math.isfinite(s) for _, _, s in pop.trace_)
