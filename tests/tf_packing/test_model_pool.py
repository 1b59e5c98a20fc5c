"""Reusing built models and their traces: which models share an architecture, and that reuse changes nothing."""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import SMALL_SPACE as SPACE
from .conftest import counting_builds, small_classifier

pytestmark = pytest.mark.tf


def mlp(lr=1e-3, *, units=16, activation="relu", optimizer="adam", dropout=False, batchnorm=False,
        loss="sparse_categorical_crossentropy", metrics=("accuracy",), seed=0):
    import keras

    keras.utils.set_random_seed(seed)
    layers = [keras.Input((64,)), keras.layers.Dense(units, activation=activation)]
    if dropout:
        layers.append(keras.layers.Dropout(0.3))
    if batchnorm:
        layers.append(keras.layers.BatchNormalization())
    model = keras.Sequential(layers + [keras.layers.Dense(10, activation="softmax")])
    opt = {"adam": keras.optimizers.Adam, "sgd": keras.optimizers.SGD, "adagrad": keras.optimizers.Adagrad,
           "momentum": lambda lr: keras.optimizers.SGD(lr, momentum=0.9)}[optimizer](lr)
    model.compile(opt, loss, metrics=list(metrics))
    return model


def test_models_differing_in_learning_rate_and_layer_names_share_an_architecture(tf_det):
    import keras

    from tf_packing.tuner.model_pool import architecture_key

    key = architecture_key(mlp(1e-3))
    assert architecture_key(mlp(0.05, seed=3)) == key  # new layer names (dense_2, ...), another rate and seed
    inputs = keras.Input((64,))
    functional = keras.Model(inputs, keras.layers.Dense(10, activation="softmax")(
        keras.layers.Dense(16, activation="relu")(inputs)))
    functional.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    again = keras.Model(inputs2 := keras.Input((64,)), keras.layers.Dense(10, activation="softmax")(
        keras.layers.Dense(16, activation="relu")(inputs2)))
    again.compile(keras.optimizers.Adam(0.2), "sparse_categorical_crossentropy", metrics=["accuracy"])
    assert architecture_key(functional) == architecture_key(again) != key


@pytest.mark.parametrize("change", [dict(units=32), dict(activation="tanh"), dict(optimizer="sgd"),
                                    dict(optimizer="momentum"), dict(dropout=True), dict(loss="mse"),
                                    dict(metrics=())])
def test_anything_a_trace_bakes_in_makes_another_architecture(tf_det, change):
    from tf_packing.tuner.model_pool import architecture_key

    assert architecture_key(mlp(**change)) != architecture_key(mlp())


def test_the_device_is_part_of_the_architecture(tf_det):
    from tf_packing.tuner.model_pool import architecture_key

    assert architecture_key(mlp(), "/CPU:0") != architecture_key(mlp())


def test_models_holding_the_users_own_code_are_not_pooled(tf_det):
    import keras

    from tf_packing.tuner.model_pool import NotPoolable, architecture_key

    class Scale(keras.layers.Layer):
        def call(self, x):
            return 2 * x

    class Mine(keras.Sequential):
        pass

    def my_loss(y_true, y_pred):
        return keras.losses.sparse_categorical_crossentropy(y_true, y_pred)

    custom_layer = keras.Sequential([keras.Input((64,)), Scale(), keras.layers.Dense(10, activation="softmax")])
    lam = keras.Sequential([keras.Input((64,)), keras.layers.Lambda(lambda x: 3 * x), keras.layers.Dense(10)])
    subclass = Mine([keras.Input((64,)), keras.layers.Dense(10, activation="softmax")])
    custom_loss = mlp()
    custom_loss.compile("adam", my_loss)
    for model, why in ((custom_layer, "Scale comes from"), (lam, "Lambda"), (subclass, r"class .*Mine is not"),
                       (custom_loss, "from")):
        if not model.compiled:
            model.compile("adam", "sparse_categorical_crossentropy")
        with pytest.raises(NotPoolable, match=why):
            architecture_key(model)


def test_state_a_configuration_does_not_hold_keeps_a_model_out_of_the_pool(tf_det, digits):
    """An adapted Normalization keeps its mean outside its weights and its config: reusing it would be wrong."""
    import keras

    from tf_packing.tuner.model_pool import NotPoolable, _check_keras_only, architecture_key

    norm = keras.layers.Normalization()
    norm.adapt(digits[0])
    model = keras.Sequential([keras.Input((64,)), norm, keras.layers.Dense(10, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy")
    with pytest.raises(NotPoolable, match="keeps what it adapted to"):
        architecture_key(model)
    with pytest.raises(NotPoolable, match="from keras_hub.layers"):  # a library named keras-something is not Keras
        _check_keras_only({"module": "keras_hub.layers", "class_name": "TokenAndPositionEmbedding"})


def test_names_the_logs_carry_stay_in_the_architecture(tf_det):
    import keras

    from tf_packing.tuner.model_pool import architecture_key

    def with_metric(name):
        model = mlp()
        model.compile("adam", "sparse_categorical_crossentropy",
                      metrics=[keras.metrics.SparseCategoricalAccuracy(name=name)])
        return model

    assert architecture_key(with_metric("acc")) != architecture_key(with_metric("accuracy_xyz"))

    def two_outputs(names):
        inputs = keras.Input((64,))
        hidden = keras.layers.Dense(16)(inputs)
        model = keras.Model(inputs, [keras.layers.Dense(10, name=n)(hidden) for n in names])
        model.compile("adam", "mse")
        return model

    assert architecture_key(two_outputs(["a", "b"])) != architecture_key(two_outputs(["c", "d"]))


def test_compiling_again_traces_the_training_step_again(tf_det, digits):
    import keras

    from tf_packing.repack.step import member_step

    model = mlp()
    first = member_step(model)
    assert member_step(model) is first
    model.compile(keras.optimizers.SGD(0.0), "sparse_categorical_crossentropy")
    before = [np.array(w) for w in model.get_weights()]
    member_step(model)((digits[0][:32], digits[1][:32]))
    for got, want in zip(model.get_weights(), before):  # the new optimizer, learning rate 0, not the old Adam
        np.testing.assert_array_equal(got, want)


def _fit(model, x, y, xv, yv, pool=None):
    from tf_packing import PackedModel
    from tf_packing.repack.packed import Member

    pack = PackedModel([Member("m", model, 32, 2)], pool=pool)
    history = pack.fit(x, y, validation_data=(xv, yv), seed=1, verbose=0)["m"].history
    return history, [np.array(w) for w in model.get_weights()], pack


@pytest.mark.parametrize("optimizer, layer, policy", [("adam", "dropout", "float32"), ("adagrad", "dropout", "float32"),
                                                     ("adam", "batchnorm", "float32"),
                                                     ("adam", "dropout", "mixed_float16")])
def test_a_kept_model_trains_a_new_trial_exactly_as_its_fresh_model_would(tf_det, digits, optimizer, layer, policy):
    """Weights, optimizer state (Adagrad starts at 0.1, not 0; the loss scale under mixed precision), BatchNorm's
    moving statistics and Dropout's generator all come from the fresh model."""
    import keras

    from tf_packing.tuner.model_pool import ModelPool

    x, y, xv, yv = digits
    build = lambda lr, seed: mlp(lr, optimizer=optimizer, seed=seed, **{layer: True})  # noqa: E731
    keras.mixed_precision.set_global_policy(policy)
    try:
        pool = ModelPool(4)
        first = pool.acquire(build(1e-2, 1))
        _fit(first, x, y, xv, yv, pool)
        pool.release(first)
        expected_history, expected_weights, _ = _fit(build(3e-3, 2), x, y, xv, yv)

        reused = pool.acquire(build(3e-3, 2))
        assert reused is first and pool.reused_ == 1
        history, weights, _ = _fit(reused, x, y, xv, yv, pool)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert history == expected_history
    for got, want in zip(weights, expected_weights):
        np.testing.assert_array_equal(got, want)


def test_a_later_pack_of_the_same_models_reuses_the_packed_step(tf_det, digits):
    from tf_packing.tuner.model_pool import ModelPool

    x, y, xv, yv = digits
    pool = ModelPool(4)
    model = pool.acquire(mlp())
    _, _, first = _fit(model, x, y, xv, yv, pool)
    pool.release(model)
    again = pool.acquire(mlp(seed=5))
    _, _, second = _fit(again, x, y, xv, yv, pool)
    assert again is model
    assert set(map(id, second._steps.values())) <= set(map(id, pool._steps.values()))
    assert list(second._steps.values())[0] is list(first._steps.values())[0]


def test_the_pool_keeps_no_more_than_it_may(tf_det):
    from tf_packing.tuner.model_pool import ModelPool

    pool = ModelPool(3)
    models = [pool.acquire(mlp(seed=i)) for i in range(3)]
    for model in models:
        pool.release(model)
    assert len(pool) == 3
    pool.make_room(in_use=1)  # one in a pack and one being built leave room for one kept
    assert len(pool) == 1
    assert pool.acquire(mlp(seed=9)) is models[2]  # the most recently used is kept
    pool.clear()
    assert len(pool) == 0 and not pool._steps


def test_a_search_reusing_models_finds_the_same_trials_and_scores(tf_det, digits):
    """max_epochs=3 is the smallest search that reuses on every path: bracket 1's promoted trial resumes its
    rung-0 checkpoint on a kept model, a fresh trial of bracket 0 starts on one, and the models alive reach the
    bound (3: those kept and the one being built). keep_best_epoch's best-epoch checkpoints pass through kept
    models too. max_epochs=9 repeats these steps over more rungs, at about twice the time."""
    from tf_packing import Tuner
    from tf_packing.tuner.model_pool import models_kept

    x, y, xv, yv = digits
    counted, peak = counting_builds(small_classifier)

    def run(reuse):
        pool = models_kept(0)
        before = pool.reused_
        tuner = Tuner(counted, SPACE, max_epochs=3, factor=3, seed=0, progress=False, max_group=2,
                      reuse_models=3 if reuse else False, keep_best_epoch=True).search(x, y, validation_data=(xv, yv))
        return tuner, pool.reused_ - before

    fresh, none_reused = run(False)
    peak.clear()
    reusing, reused = run(True)
    assert none_reused == 0 and reused > 0
    rows_fresh, rows_reusing = fresh.results(), reusing.results()
    assert [r["trial"] for r in rows_fresh] == [r["trial"] for r in rows_reusing]
    np.testing.assert_allclose([r["val_accuracy"] for r in rows_fresh], [r["val_accuracy"] for r in rows_reusing],
                               atol=1e-6)
    assert max(peak) <= 3  # the models kept or packed, and the one being built
    assert len(models_kept(0)) == 0  # the search lets its models go when it ends


def test_evaluate_equals_keras_evaluate(tf_det, digits):
    """Float64 inputs, sample weights, a short last batch, two inputs: the same numbers as ``model.evaluate``."""
    import keras

    from tf_packing.repack.evaluation import evaluate

    x, y, xv, yv = digits
    model = mlp()
    model.fit(x, y, epochs=1, verbose=0)
    weights = np.linspace(0.1, 2, len(yv))
    for kw in (dict(batch_size=32), dict(batch_size=64, sample_weight=weights), dict(batch_size=None)):
        want = model.evaluate(xv.astype("float64"), yv, verbose=0, return_dict=True, **kw)
        assert evaluate(model, xv.astype("float64"), yv, **kw) == want

    a, b = keras.Input((40,), name="a"), keras.Input((24,), name="b")
    two = keras.Model([a, b], keras.layers.Dense(10, activation="softmax")(keras.layers.Concatenate()([a, b])))
    two.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    inputs = {"a": xv[:, :40], "b": xv[:, 40:]}
    assert evaluate(two, inputs, yv, batch_size=50) == two.evaluate(inputs, yv, batch_size=50, verbose=0,
                                                                      return_dict=True)


@pytest.mark.parametrize("reuse_models, kept", [(True, 32), (False, 0), (5, 5), (0, 0)])
def test_reuse_models_sets_how_many_models_a_process_keeps(reuse_models, kept):
    from tf_packing.tuner.tuner import _kept_models

    assert _kept_models(reuse_models, 8, None) == kept
    assert _kept_models(reuse_models, 8, 2**30) == 0  # a memory capacity counts a pack's models only


@pytest.mark.parametrize("bad", [-1, 2.5, "yes"])
def test_a_bad_reuse_models_says_what_it_takes(bad):
    from tf_packing.tuner.tuner import _kept_models

    for capacity in (None, 2**30):  # refused with a memory capacity too, where none is kept anyway
        with pytest.raises(ValueError, match=r"reuse_models must be True, False or a number of models >= 0"):
            _kept_models(bad, 8, capacity)
