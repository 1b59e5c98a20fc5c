"""The packed unit: isolation, shared preprocessing, load/free round trip and hot replacement."""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import make_mlp

EPOCHS = 2


def train_alone(model, x, y, batches, batch_size):
    """Train ``model`` alone with Keras on a member's planned batches; return its per-step losses."""
    losses = []
    for rows in batches:
        assert len(rows) <= batch_size
        model.reset_metrics()
        losses.append(float(model.train_on_batch(x[rows], y[rows])))
    return losses


def weights_close(a, b, atol):
    return all(np.allclose(u, v, atol=atol, rtol=0) for u, v in zip(a, b))


@pytest.mark.parametrize("sizes, fuse, atol", [
    ((32, 32), "never", 1e-6),     # aligned batches, separate matmuls
    ((32, 20), "auto", 1e-6),      # misaligned batches: pad/slice
    ((32, 32), "always", 1e-5),    # stacked-weight fusion: same maths, batched products
])
def test_member_in_pack_matches_member_alone(tf_det, toy_data, sizes, fuse, atol):
    from tf_packing import pack

    x, y = toy_data
    specs = [("a", 1, 0.01, "adam"), ("b", 2, 0.1, "sgd")]
    packed = pack([make_mlp(s, lr, opt) for _, s, lr, opt in specs], batch_sizes=list(sizes),
                  names=[n for n, *_ in specs], epochs=EPOCHS, fuse=fuse)
    history = packed.fit(x, y, shuffle=True, seed=3, record=True)
    assert [len(history[n]) for n, *_ in specs] == [EPOCHS * -(-300 // b) for b in sizes]
    for (name, seed, lr, opt), b in zip(specs, sizes):
        alone = make_mlp(seed, lr, opt)
        curve = train_alone(alone, x, y, packed.planner_.history_[name], b)
        assert weights_close(packed.checkpoints_[name].weights, alone.get_weights(), atol)
        assert np.allclose(history[name], curve, atol=1e-5, rtol=1e-5)


def test_preprocessing_runs_once_per_packed_step(tf_det, toy_data):
    from tf_packing import pack

    x, y = toy_data
    packed = pack([make_mlp(s) for s in range(3)], batch_sizes=50, names=["a", "b", "c"],
                  preprocess=lambda t: t * 2.0)
    packed.fit(x, y)
    assert (packed.steps_, packed.preprocess_calls_) == (6, 6)
    sequential = 0
    for s in range(3):  # the same three members trained one after another
        alone = pack([make_mlp(s)], batch_sizes=50, preprocess=lambda t: t * 2.0)
        alone.fit(x, y)
        sequential += alone.preprocess_calls_
    assert sequential == 18


def test_free_and_load_round_trip_continues_exactly(tf_det, toy_data):
    from tf_packing import pack

    x, y = toy_data
    straight = pack([make_mlp(5)], batch_sizes=40, names=["m"], epochs=2)
    straight.fit(x, y, shuffle=True, seed=1)

    first = pack([make_mlp(5)], batch_sizes=40, names=["m"], epochs=1)
    first.fit(x, y, shuffle=True, seed=1)
    ckpt = first.checkpoints_["m"]
    assert ckpt.epochs_done == 1 and len(ckpt.losses) == 8
    fresh = make_mlp(99, lr=0.5)  # different initial weights; the checkpoint overrides them
    from tf_packing import PackedModel

    resumed = PackedModel([])
    resumed.load(fresh, batch_size=40, epochs=1, name="m", checkpoint=ckpt)
    resumed.fit(x, y, shuffle=True, seed=1)
    final = resumed.checkpoints_["m"]
    assert final.epochs_done == 2
    assert weights_close(final.weights, straight.checkpoints_["m"].weights, 1e-6)
    assert weights_close(final.optimizer_variables, straight.checkpoints_["m"].optimizer_variables, 1e-6)
    assert np.allclose(final.losses, straight.checkpoints_["m"].losses, atol=1e-6, rtol=0)


def test_queued_member_is_hot_loaded_when_one_finishes(tf_det, toy_data):
    from tf_packing import Member, pack

    x, y = toy_data
    loads = []
    packed = pack([make_mlp(1), make_mlp(2)], batch_sizes=[100, 50], names=["fast", "slow"])
    queue = [Member("next", make_mlp(3), 100, 1)]
    history = packed.fit(x, y, queue=queue, record=True,
                         on_step=lambda p, plan: loads.append(sorted(p.members)))
    # fast takes 3 steps, then "next" joins and shares rows with "slow" until both finish.
    assert loads == [["fast", "slow"]] * 3 + [["next", "slow"]] * 3
    assert {n: len(h) for n, h in history.items()} == {"fast": 3, "slow": 6, "next": 3}
    assert sorted(packed.checkpoints_) == ["fast", "next", "slow"] and not packed.members
    # the late member still saw every example once
    assert np.array_equal(np.sort(np.concatenate(packed.planner_.history_["next"])), np.arange(300))
    alone = make_mlp(3)
    train_alone(alone, x, y, packed.planner_.history_["next"], 100)
    assert weights_close(packed.checkpoints_["next"].weights, alone.get_weights(), 1e-6)


def test_evaluate_reports_each_member(tf_det, toy_data):
    from tf_packing import pack

    x, y = toy_data
    models = [make_mlp(1), make_mlp(2)]
    packed = pack(models, names=["a", "b"])
    scores = packed.evaluate(x, y, batch_size=128)
    for name, model in zip(["a", "b"], models):
        pred = model.predict(x, verbose=0)
        assert scores[name]["accuracy"] == pytest.approx(np.mean(pred.argmax(1) == y))
        expected = -np.mean(np.log(pred[np.arange(len(y)), y]))
        assert scores[name]["loss"] == pytest.approx(expected, rel=1e-5)


def test_errors_say_what_to_fix(toy_data):
    import keras
    from tf_packing import pack

    raw = keras.Sequential([keras.Input((8,)), keras.layers.Dense(3)])
    with pytest.raises(ValueError, match="model 'raw' is not compiled"):
        pack([raw], names=["raw"])
    with pytest.raises(ValueError, match="batch_sizes has 1 entries for 2 models"):
        pack([make_mlp(1), make_mlp(2)], batch_sizes=[4])
    with pytest.raises(ValueError, match="fuse must be 'auto', 'always' or 'never'. Got 'yes'"):
        pack([make_mlp(1)], fuse="yes")
    packed = pack([make_mlp(1), make_mlp(2)], batch_sizes=[4, 8], names=["a", "b"], fuse="always")
    with pytest.raises(ValueError, match="fuse='always' but members"):
        packed.fit(*toy_data, max_steps=1)


def test_pack_docstring_example(tf_det):
    import doctest

    import tf_packing.packed

    assert doctest.testmod(tf_packing.packed).failed == 0


def test_finished_member_stays_traced_as_ghost_and_gets_its_state_back(tf_det, toy_data):
    from tf_packing import pack

    x, y = toy_data
    models = [make_mlp(1), make_mlp(2)]
    packed = pack(models, batch_sizes=[100, 20], names=["a", "b"])
    packed.fit(x, y)
    assert packed.steps_ == 15 and len(packed._steps) == 1  # "a" left after 3 steps: no second trace
    for name, model in zip("ab", models):  # the ghost's masked updates were undone
        assert weights_close(packed.checkpoints_[name].weights, model.get_weights(), 0.0)


def make_cnn(seed: int, lr: float = 0.01, head: int = 3):
    """A compiled small CNN on 6x6x1 inputs; ``head`` varies the layers after the first convolution."""
    import keras

    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((6, 6, 1)), keras.layers.Conv2D(4, 3, padding="same", activation="relu"),
                              keras.layers.Conv2D(head, 3, activation="relu"), keras.layers.Flatten(),
                              keras.layers.Dense(3, activation="softmax")])
    model.compile(keras.optimizers.Adam(lr), "sparse_categorical_crossentropy")
    return model


def test_cnn_members_sharing_a_first_conv_fuse_it_and_match_alone(tf_det, toy_data):
    from tf_packing import fused, pack

    x, y = toy_data
    x = np.concatenate([x, x ** 2, np.sin(x), np.cos(x), x[:, :4]], 1).reshape(-1, 6, 6, 1)  # 36 pixels
    models = [make_cnn(1, 0.01, head=2), make_cnn(2, 0.05, head=5)]
    assert fused.can_fuse_first(models, conv_only=True) and not fused.can_fuse(models)
    assert not fused.can_fuse_first([models[0], make_mlp(3)])  # different first layers
    assert not fused.can_fuse_first([make_mlp(3), make_mlp(4)], conv_only=True)
    packed = pack(models, batch_sizes=50, names=["a", "b"], fuse="auto", epochs=1)
    history = packed.fit(x, y, record=True)
    assert [key[2] for key in packed._steps] == ["first"]  # one step, tracing the first-layer fusion
    for name, seed, lr, head in (("a", 1, 0.01, 2), ("b", 2, 0.05, 5)):
        alone = make_cnn(seed, lr, head)
        curve = train_alone(alone, x, y, packed.planner_.history_[name], 50)
        assert weights_close(packed.checkpoints_[name].weights, alone.get_weights(), 1e-5)
        assert np.allclose(history[name], curve, atol=1e-5)
