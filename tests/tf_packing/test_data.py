"""Loaders: bundled digits, generated data, and local MNIST/CIFAR-10 files (never downloaded)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from tf_packing.repack.data import load_cifar10, load_digits, load_mnist, make_classification


def test_digits_split_and_scale():
    (x, y), (xv, yv) = load_digits(seed=0)
    assert (x.shape, xv.shape, y.dtype, x.dtype) == ((1348, 64), (449, 64), np.int32, np.float32)
    assert (x.min(), x.max()) == (0.0, 1.0) and sorted(set(y.tolist())) == list(range(10))
    (xi, _), _ = load_digits(seed=0, image=True)
    assert xi.shape == (1348, 8, 8, 1) and np.array_equal(xi.reshape(-1, 64), x)


def test_generated_data_is_seeded():
    (x, y), (xv, yv) = make_classification(100, shape=(4, 4, 1), n_classes=3, seed=2)
    (x2, _), _ = make_classification(100, shape=(4, 4, 1), n_classes=3, seed=2)
    assert x.shape == (80, 4, 4, 1) and xv.shape == (20, 4, 4, 1) and np.array_equal(x, x2)
    assert set(np.unique(np.concatenate([y, yv]))) <= {0, 1, 2}


def test_missing_files_raise_with_the_fix(tmp_path):
    with pytest.raises(FileNotFoundError, match="MNIST is not at .*missing.npz.*never downloads"):
        load_mnist(tmp_path / "missing.npz")
    with pytest.raises(FileNotFoundError, match="CIFAR10 is not at .*data_batch_1..5 and test_batch"):
        load_cifar10(tmp_path)


def test_local_mnist_file(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {"x_train": rng.integers(0, 256, (6, 28, 28), dtype=np.uint8), "y_train": np.arange(6),
              "x_test": np.full((2, 28, 28), 255, np.uint8), "y_test": np.array([3, 4])}
    np.savez(tmp_path / "mnist.npz", **arrays)
    (x, y), (xt, yt) = load_mnist(tmp_path / "mnist.npz")
    assert x.shape == (6, 28, 28, 1) and np.allclose(x[..., 0] * 255, arrays["x_train"])
    assert xt.max() == 1.0 and yt.tolist() == [3, 4] and y.dtype == np.int32


def test_local_cifar10_batches(tmp_path):
    for i, name in enumerate([f"data_batch_{k}" for k in range(1, 6)] + ["test_batch"]):
        data = np.full((2, 3072), i, np.uint8)
        data[:, 1024:2048] = 100  # the green plane
        with open(tmp_path / name, "wb") as fh:
            pickle.dump({b"data": data, b"labels": [i, 9 - i]}, fh)
    (x, y), (xt, yt) = load_cifar10(tmp_path)
    assert x.shape == (10, 32, 32, 3) and xt.shape == (2, 32, 32, 3)
    assert y.tolist() == [0, 9, 1, 8, 2, 7, 3, 6, 4, 5] and yt.tolist() == [5, 4]
    assert x[2, 0, 0].tolist() == pytest.approx([1 / 255, 100 / 255, 1 / 255])
