"""Shared pieces of the tf_packing tests: deterministic TensorFlow and small models on tiny data."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


@pytest.fixture(scope="session")
def tf_det():
    """TensorFlow with deterministic ops (the isolation tests compare floats across runs).

    The objects alive once TensorFlow, Keras and tf_packing are imported (millions) are frozen out of
    the collector: the tuner calls ``gc.collect()`` after each pack to free its models, and each call
    otherwise walks them all (0.2-1.6 s each, a fifth of a small search). Models and packs made later
    are collected as before, which the tests that watch models go still check.
    """
    import gc

    import keras  # noqa: F401  (imported before the freeze)
    import tensorflow as tf

    import tf_packing  # noqa: F401

    tf.config.experimental.enable_op_determinism()
    gc.collect()
    gc.freeze()
    return tf


@pytest.fixture(scope="session")
def toy_data():
    """300 rows of 8 Gaussian features and 3 classes, fixed seed."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 8)).astype("float32")
    y = (x[:, 0] + x[:, 1] > 0).astype("int32") + (x[:, 2] > 1).astype("int32")
    return x, y


def make_mlp(seed: int, lr: float = 0.01, optimizer: str = "adam", hidden: int = 16, n_in: int = 8):
    """A compiled two-layer MLP with weights drawn from ``seed``."""
    import keras

    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((n_in,)), keras.layers.Dense(hidden, activation="relu"),
                              keras.layers.Dense(3, activation="softmax")])
    opt = {"adam": keras.optimizers.Adam, "sgd": keras.optimizers.SGD}[optimizer](lr)
    model.compile(opt, "sparse_categorical_crossentropy")
    return model


@pytest.fixture(scope="module")
def digits():
    """600 training and 200 validation rows of scikit-learn's digits: a tuner search in seconds."""
    from tf_packing import load_digits

    (x, y), (xv, yv) = load_digits(seed=0)
    return x[:600], y[:600], xv[:200], yv[:200]


#: A search space of six configurations for :func:`small_classifier`.
SMALL_SPACE = {"batch_size": [32], "learning_rate": [1e-4, 1e-3, 1e-2], "optimizer": ["adam", "sgd"]}


def small_classifier(config, extra=None):
    """A compiled 64-16-10 classifier for the digits, its optimizer and learning rate from ``config``.

    ``extra`` (a callable returning a layer) goes after the hidden layer.
    """
    import keras

    layers = [keras.Input((64,)), keras.layers.Dense(16, activation="relu")]
    if extra is not None:
        layers.append(extra())
    model = keras.Sequential(layers + [keras.layers.Dense(10, activation="softmax")])
    opt = {"adam": keras.optimizers.Adam, "sgd": keras.optimizers.SGD}[config["optimizer"]](config["learning_rate"])
    model.compile(opt, "sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def counting_builds(build):
    """``(build_fn, peak)``: ``build`` that appends to ``peak`` how many of its models are alive as each is built."""
    import gc
    import weakref

    live, peak = weakref.WeakSet(), []

    def counted(config):
        gc.collect()
        model = build(config)
        live.add(model)
        peak.append(len(live))
        return model

    return counted, peak
