"""The packed unit against Keras itself: every member ends exactly as ``model.fit`` leaves it alone.

Each case builds the same models twice from the same seeds, trains one set with ``model.fit``
one model at a time and the other packed, and compares weights and History logs.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from .conftest import make_mlp

pytestmark = pytest.mark.tf


def fit_alone(build, x, y, *, batch_size, epochs, **fit_kw):
    model = build()
    history = model.fit(x, y, batch_size=batch_size, epochs=epochs, shuffle=False, verbose=0, **fit_kw)
    return model, history.history


def assert_same_as_keras(packed, histories, alone: dict, atol=0.0):
    """Weights and every History value of each packed member equal ``model.fit``'s."""
    for name, (model, history) in alone.items():
        mine = packed.members[name].model.get_weights()
        assert all(np.allclose(a, b, atol=atol, rtol=0) for a, b in zip(mine, model.get_weights())), name
        assert sorted(histories[name].history) == sorted(history)
        for key, values in history.items():
            assert np.allclose(histories[name].history[key], values, atol=max(atol, 1e-7), rtol=1e-6), (name, key)


def mlp_with(*extra, seed, lr=0.01, loss="sparse_categorical_crossentropy", n_in=8, dtype=None, **compile_kw):
    """A compiled MLP with ``extra`` layers after its hidden layer."""
    import keras

    def build():
        keras.utils.set_random_seed(seed)
        layers = [keras.Input((n_in,)), keras.layers.Dense(16, activation="relu"), *[f() for f in extra],
                  keras.layers.Dense(3, activation="softmax", dtype="float32" if dtype else None)]
        model = keras.Sequential(layers)
        model.compile(keras.optimizers.Adam(lr), loss, metrics=["accuracy"], **compile_kw)
        return model

    return build


def test_batch_norm_with_a_short_last_batch_matches_model_fit(tf_det, toy_data):
    import keras
    from tf_packing import pack

    x, y = toy_data  # 300 rows: b=32 ends each epoch with 12 rows, b=50 with none
    builds = {"bn": mlp_with(keras.layers.BatchNormalization, seed=1), "plain": mlp_with(seed=2)}
    packed = pack([builds["bn"](), builds["plain"]()], batch_sizes=[32, 50], epochs=[2, 3], names=list(builds))
    histories = packed.fit(x, y, shuffle=False, verbose=0)
    alone = {"bn": fit_alone(builds["bn"], x, y, batch_size=32, epochs=2),
             "plain": fit_alone(builds["plain"], x, y, batch_size=50, epochs=3)}
    assert_same_as_keras(packed, histories, alone)


def test_mixed_precision_scales_the_loss_as_keras_does(tf_det, toy_data):
    import keras
    from tf_packing import pack

    x, y = toy_data
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        builds = [mlp_with(seed=s, dtype="mixed") for s in (1, 2)]
        models = [b() for b in builds]
        assert isinstance(models[0].optimizer, keras.optimizers.LossScaleOptimizer)
        packed = pack(models, batch_sizes=[30, 60], epochs=2, names=["a", "b"])
        histories = packed.fit(x, y, shuffle=False, verbose=0)
        alone = {"a": fit_alone(builds[0], x, y, batch_size=30, epochs=2),
                 "b": fit_alone(builds[1], x, y, batch_size=60, epochs=2)}
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert_same_as_keras(packed, histories, alone)
    assert histories["a"].history["loss"][-1] < histories["a"].history["loss"][0]  # it really trains


def test_one_hot_labels_sample_weights_and_regularizers(tf_det, toy_data):
    import keras
    from tf_packing import pack

    x, y = toy_data
    one_hot = np.eye(3, dtype="float32")[y]
    weights = np.linspace(0.2, 2.0, len(x)).astype("float32")
    reg = lambda: keras.layers.Dense(8, kernel_regularizer=keras.regularizers.L2(0.01))
    builds = [mlp_with(reg, seed=s, loss="categorical_crossentropy") for s in (3, 4)]
    packed = pack([b() for b in builds], batch_sizes=[40, 25], epochs=2, names=["a", "b"])
    histories = packed.fit(x, one_hot, sample_weight=weights, shuffle=False, verbose=0)
    alone = {n: fit_alone(b, x, one_hot, batch_size=bs, epochs=2, sample_weight=weights)
             for n, b, bs in (("a", builds[0], 40), ("b", builds[1], 25))}
    assert_same_as_keras(packed, histories, alone)


def test_dropout_draws_as_keras_does(tf_det, toy_data):
    import keras
    from tf_packing import pack

    x, y = toy_data
    builds = [mlp_with(lambda: keras.layers.Dropout(0.5), seed=s) for s in (5, 6)]
    packed = pack([b() for b in builds], batch_sizes=32, epochs=2, names=["a", "b"])
    histories = packed.fit(x, y, shuffle=False, verbose=0)
    alone = {n: fit_alone(b, x, y, batch_size=32, epochs=2) for n, b in zip("ab", builds)}
    # Each dropout layer draws from its own seed generator, advanced once per step either way.
    assert_same_as_keras(packed, histories, alone)


def test_several_inputs_are_packed_and_different_inputs_refused(tf_det, toy_data):
    import keras
    from tf_packing import pack

    x, y = toy_data
    xs = {"left": x[:, :5], "right": x[:, 5:]}

    def two_inputs(seed):
        def build():
            keras.utils.set_random_seed(seed)
            left, right = keras.Input((5,), name="left"), keras.Input((3,), name="right")
            h = keras.layers.Dense(8, activation="relu")(keras.layers.Concatenate()([left, right]))
            model = keras.Model({"left": left, "right": right}, keras.layers.Dense(3, activation="softmax")(h))
            model.compile(keras.optimizers.SGD(0.1), "sparse_categorical_crossentropy", metrics=["accuracy"])
            return model
        return build

    builds = [two_inputs(7), two_inputs(8)]
    packed = pack([b() for b in builds], batch_sizes=[64, 32], epochs=2, names=["a", "b"])
    histories = packed.fit(xs, y, shuffle=False, verbose=0)
    alone = {"a": fit_alone(builds[0], xs, y, batch_size=64, epochs=2),
             "b": fit_alone(builds[1], xs, y, batch_size=32, epochs=2)}
    assert_same_as_keras(packed, histories, alone)
    with pytest.raises(ValueError, match=r"member 'wide' takes inputs \[\(\(16,\), 'float32'\)\] but 'narrow' takes"):
        pack([make_mlp(1), make_mlp(2, n_in=16)], names=["narrow", "wide"])


def test_a_custom_train_step_is_honoured(tf_det, toy_data):
    import keras
    from tf_packing import pack

    x, y = toy_data

    class HalfStep(keras.Sequential):
        """Applies half of every gradient: a model with its own training step."""

        def train_step(self, data):
            import tensorflow as tf

            xb, yb = data
            with tf.GradientTape() as tape:
                loss = self.compute_loss(x=xb, y=yb, y_pred=self(xb, training=True))
            grads = tape.gradient(loss, self.trainable_weights)
            self.optimizer.apply_gradients(zip([g * 0.5 for g in grads], self.trainable_weights))
            return {"loss": loss}

    def build():
        keras.utils.set_random_seed(9)
        model = HalfStep([keras.Input((8,)), keras.layers.Dense(3, activation="softmax")])
        model.compile(keras.optimizers.SGD(0.1), "sparse_categorical_crossentropy")
        return model

    packed = pack([build(), make_mlp(1)], batch_sizes=32, names=["half", "plain"])
    packed.fit(x, y, shuffle=False, verbose=0)
    alone, _ = fit_alone(build, x, y, batch_size=32, epochs=1)
    assert all(np.array_equal(a, b) for a, b in zip(packed.members["half"].model.get_weights(), alone.get_weights()))


@pytest.fixture
def xla_allowed(tf_det):
    """Keras turns XLA off while op determinism is on (not every XLA op is deterministic)."""
    from tensorflow.python.framework import config  # the switch back has no public name

    config.disable_op_determinism()
    yield
    config.enable_op_determinism()


def test_xla_compiled_members_get_an_xla_compiled_step(xla_allowed, toy_data):
    from tf_packing import pack

    x, y = toy_data
    builds = [mlp_with(seed=s, jit_compile=True) for s in (1, 2)]
    packed = pack([b() for b in builds], batch_sizes=[32, 64], epochs=2, names=["a", "b"])
    assert packed.members["a"].model.jit_compile is True
    histories = packed.fit(x, y, shuffle=False, verbose=0)
    (step,) = packed._steps.values()
    assert step._jit_compile is True  # as model.fit compiles each of them
    alone = {"a": fit_alone(builds[0], x, y, batch_size=32, epochs=2),
             "b": fit_alone(builds[1], x, y, batch_size=64, epochs=2)}
    assert_same_as_keras(packed, histories, alone, atol=1e-5)  # XLA may fuse float ops differently
    unjitted = pack([mlp_with(seed=3)()], names=["c"])
    unjitted.fit(x, y, verbose=0)
    assert next(iter(unjitted._steps.values()))._jit_compile is False  # Keras does not compile on a CPU


def test_datasets_and_generators_feed_every_member_whole_batches(tf_det, toy_data):
    import tensorflow as tf
    from tf_packing import pack

    x, y = toy_data
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(40)
    builds = [mlp_with(seed=s) for s in (1, 2)]
    packed = pack([b() for b in builds], epochs=[2, 3], names=["a", "b"])
    histories = packed.fit(dataset, verbose=0)
    for name, build, epochs in (("a", builds[0], 2), ("b", builds[1], 3)):
        model = build()
        expected = model.fit(dataset, epochs=epochs, verbose=0).history
        assert all(np.array_equal(u, v) for u, v in zip(packed.members[name].model.get_weights(), model.get_weights()))
        assert np.allclose(histories[name].history["loss"], expected["loss"], rtol=1e-6)

    batches = [(x[i:i + 50], y[i:i + 50]) for i in range(0, 300, 50)]  # a re-iterable list of batches
    again = pack([builds[0]()], names=["a"], epochs=2)
    again.fit(batches, verbose=0)
    model = builds[0]()
    model.fit(x, y, batch_size=50, epochs=2, shuffle=False, verbose=0)
    assert all(np.array_equal(u, v) for u, v in zip(again.members["a"].model.get_weights(), model.get_weights()))
    with pytest.raises(ValueError, match="was used up after one epoch"):
        pack([builds[1]()], names=["b"], epochs=2).fit((b for b in batches), verbose=0)
    with pytest.raises(ValueError, match="has batch_size=32, but a dataset or generator brings its own batches"):
        pack([builds[1]()], batch_sizes=32).fit(dataset, verbose=0)
    with pytest.raises(ValueError, match="queue needs array data"):
        pack([builds[1]()]).fit(dataset, queue=[lambda: None], verbose=0)


def test_validation_callbacks_early_stopping_and_checkpoints(tf_det, toy_data, tmp_path):
    import keras
    from tf_packing import pack

    x, y = toy_data
    xv, yv = x[:60], y[:60]
    build_a, build_b = mlp_with(seed=1, lr=0.05), mlp_with(seed=2)

    def callbacks():
        return {"a": [keras.callbacks.EarlyStopping("val_loss", patience=0, min_delta=10.0),
                      keras.callbacks.ModelCheckpoint(str(tmp_path / "a-{epoch}.keras"))],
                "b": [keras.callbacks.ModelCheckpoint(str(tmp_path / "b-{epoch}.keras"))]}

    packed = pack([build_a(), build_b()], batch_sizes=[30, 50], epochs=4, names=["a", "b"])
    histories = packed.fit(x, y, validation_data=(xv, yv), callbacks=callbacks(), shuffle=False, verbose=0)
    cbs = callbacks()
    alone = {"a": fit_alone(build_a, x, y, batch_size=30, epochs=4, validation_data=(xv, yv), callbacks=cbs["a"]),
             "b": fit_alone(build_b, x, y, batch_size=50, epochs=4, validation_data=(xv, yv), callbacks=cbs["b"])}
    assert_same_as_keras(packed, histories, alone)
    assert len(histories["a"].history["val_loss"]) == 2 and len(histories["b"].history["val_loss"]) == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-1.keras", "a-2.keras", "b-1.keras", "b-2.keras",
                                                           "b-3.keras", "b-4.keras"]
    with pytest.raises(ValueError, match="Give each member its own"):
        pack([build_a()]).fit(x, y, callbacks=[keras.callbacks.ModelCheckpoint(str(tmp_path / "m.keras"))])


def test_a_diverging_member_is_stopped_and_the_others_go_on(tf_det, toy_data):
    from tf_packing import pack

    x, y = toy_data
    x = x * 1e3
    bad = make_mlp(1, lr=1e30, optimizer="sgd", n_in=8)
    packed = pack([bad, make_mlp(2)], batch_sizes=30, epochs=3, names=["bad", "good"])
    histories = packed.fit(x, y, shuffle=False, verbose=0)
    assert list(packed.diverged_) == ["bad"]
    assert len(histories["bad"].history["loss"]) == 1 and len(histories["good"].history["loss"]) == 3
    assert np.isfinite(histories["good"].history["loss"]).all()


def test_evaluate_and_predict_after_fit_equal_keras(tf_det, toy_data):
    from tf_packing import pack

    x, y = toy_data
    packed = pack([make_mlp(1), make_mlp(2)], batch_sizes=[32, 64], names=["a", "b"])
    packed.fit(x, y, verbose=0)
    scores, predictions = packed.evaluate(x, y), packed.predict(x)
    for name in "ab":
        model, batch_size = packed.members[name].model, packed.members[name].batch_size
        assert scores[name] == model.evaluate(x, y, batch_size=batch_size, verbose=0, return_dict=True)
        assert np.array_equal(predictions[name], model.predict(x, batch_size=batch_size, verbose=0))
    with pytest.raises(KeyError, match=r"no members named \['zz'\]"):
        packed.evaluate(x, y, names=["zz"])


def test_free_and_load_round_trip_continues_exactly(tf_det, toy_data):
    from tf_packing import PackedModel, pack

    x, y = toy_data
    straight = pack([make_mlp(5)], batch_sizes=40, names=["m"], epochs=2)
    straight.fit(x, y, seed=1, verbose=0)

    first = pack([make_mlp(5)], batch_sizes=40, names=["m"], epochs=1)
    first.fit(x, y, seed=1, verbose=0)
    ckpt = first.free("m")
    assert ckpt.epochs_done == 1 and len(ckpt.losses) == 8
    resumed = PackedModel([])
    resumed.load(make_mlp(99, lr=0.5), batch_size=40, epochs=1, name="m", checkpoint=ckpt)
    resumed.fit(x, y, seed=1, verbose=0)
    final = resumed.free("m")
    assert final.epochs_done == 2
    expected = straight.free("m")
    assert all(np.allclose(a, b, atol=1e-6) for a, b in zip(final.weights, expected.weights))
    assert all(np.allclose(a, b, atol=1e-6) for a, b in zip(final.optimizer_variables, expected.optimizer_variables))
    assert np.allclose(final.losses, expected.losses, atol=1e-6, rtol=0)


def test_free_lets_the_model_go(tf_det, toy_data):
    from tf_packing import pack

    x, y = toy_data
    packed = pack([make_mlp(1), make_mlp(2)], batch_sizes=50, names=["a", "b"], epochs=2)
    packed.fit(x, y, max_steps=3, verbose=0)  # mid-run: the traced step holds both models
    gone = weakref.ref(packed.members["a"].model)
    packed.free("a")
    packed.fit(x, y, verbose=0)  # the rest of the run, re-traced without "a"
    gc.collect()
    assert gone() is None  # nothing in the pack keeps it (or its device memory) alive


def test_queued_members_are_built_when_loaded_and_replace_finished_ones(tf_det, toy_data):
    from tf_packing import Member, pack

    x, y = toy_data
    built = []

    def later():
        built.append("next")
        return Member("next", make_mlp(3), 100, 1)

    loads = []
    packed = pack([make_mlp(1), make_mlp(2)], batch_sizes=[100, 50], names=["fast", "slow"])
    histories = packed.fit(x, y, queue=[later], record=True, shuffle=False, verbose=0,
                           on_step=lambda p, plan: loads.append(sorted(p.members)))
    assert built == ["next"] and loads[2] == ["fast", "slow"] and loads[3] == ["next", "slow"]
    assert {n: len(h.history["loss"]) for n, h in histories.items()} == {"fast": 1, "slow": 1, "next": 1}
    # a finished member makes room only for a waiting one; with the queue empty "slow" stays
    assert sorted(packed.checkpoints_) == ["fast"] and sorted(packed.members) == ["next", "slow"]
    assert np.array_equal(np.concatenate(packed.planner_.history_["next"]), np.arange(300))
    model = make_mlp(3)
    model.fit(x, y, batch_size=100, epochs=1, shuffle=False, verbose=0)
    assert all(np.array_equal(a, b) for a, b in zip(packed.members["next"].model.get_weights(), model.get_weights()))


def test_preprocessing_runs_once_per_packed_step(tf_det, toy_data):
    from tf_packing import pack

    x, y = toy_data
    packed = pack([make_mlp(s) for s in range(3)], batch_sizes=50, names=["a", "b", "c"],
                  preprocess=lambda t: t * 2.0)
    packed.fit(x, y, verbose=0)
    assert (packed.steps_, packed.preprocess_calls_) == (6, 6)


def test_finished_members_stay_traced_without_being_touched(tf_det, toy_data):
    from tf_packing import pack

    x, y = toy_data
    packed = pack([make_mlp(1), make_mlp(2)], batch_sizes=[100, 20], names=["a", "b"])
    packed.fit(x, y, shuffle=False, verbose=0)
    assert packed.steps_ == 15 and len(packed._steps) == 1  # "a" finished after 3 steps: no second trace
    model = make_mlp(1)
    model.fit(x, y, batch_size=100, epochs=1, shuffle=False, verbose=0)
    assert all(np.array_equal(a, b) for a, b in zip(packed.members["a"].model.get_weights(), model.get_weights()))


def test_errors_say_what_to_fix(toy_data):
    import keras
    from tf_packing import pack

    raw = keras.Sequential([keras.Input((8,)), keras.layers.Dense(3)])
    with pytest.raises(ValueError, match="model 'raw' is not compiled"):
        pack([raw], names=["raw"])
    with pytest.raises(ValueError, match="batch_sizes has 1 entries for 2 models"):
        pack([make_mlp(1), make_mlp(2)], batch_sizes=[4])
    with pytest.raises(ValueError, match=r"different numbers of rows: \{'x': 300, 'y': 299\}"):
        pack([make_mlp(1)]).fit(toy_data[0], toy_data[1][:-1], verbose=0)


def test_pack_docstring_example(tf_det):
    import doctest

    import tf_packing.repack.packed

    assert doctest.testmod(tf_packing.repack.packed).failed == 0
