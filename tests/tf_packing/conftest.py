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
