"""Datasets for packed training: bundled and generated data, and local CIFAR-10/MNIST files.

Nothing here downloads. ``load_digits`` uses scikit-learn's bundled 8x8 digits
and ``make_classification`` generates data, for tests and benchmarks.
``load_cifar10`` and ``load_mnist`` read the files Keras's own loaders store
(``~/.keras/datasets``) or any folder you point them to; when the files are
missing they say where to put them.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np

__all__ = ["load_cifar10", "load_digits", "load_mnist", "make_classification"]

KERAS_DATASETS = Path(os.environ.get("KERAS_HOME", Path.home() / ".keras")) / "datasets"


def _split(x, y, test_size: float, seed: int):
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = int(round(len(x) * test_size))
    test, train = order[:n_test], order[n_test:]
    return (x[train], y[train]), (x[test], y[test])


def load_digits(*, test_size: float = 0.25, seed: int = 0, image: bool = False):
    """scikit-learn's bundled digits (1,797 8x8 images, 10 classes) scaled to [0, 1].

    Parameters
    ----------
    test_size : float, default=0.25
        Share of rows held out for validation.
    seed : int, default=0
        Seed of the split.
    image : bool, default=False
        Shape the inputs ``(n, 8, 8, 1)`` for CNNs instead of ``(n, 64)``.

    Returns
    -------
    tuple
        ``(x_train, y_train), (x_test, y_test)`` with float32 inputs and int32 labels.
    """
    from sklearn.datasets import load_digits as sk_digits

    bunch = sk_digits()
    x = (bunch.data / 16.0).astype("float32")
    if image:
        x = x.reshape(-1, 8, 8, 1)
    return _split(x, bunch.target.astype("int32"), test_size, seed)


def make_classification(n: int = 4096, *, shape=(32,), n_classes: int = 10, seed: int = 0, test_size: float = 0.2):
    """Generated classification data: class means plus Gaussian noise, learnable but not trivial.

    Returns
    -------
    tuple
        ``(x_train, y_train), (x_test, y_test)``.
    """
    rng = np.random.default_rng(seed)
    means = rng.normal(size=(n_classes, *shape)).astype("float32")
    y = rng.integers(0, n_classes, size=n).astype("int32")
    x = means[y] + rng.normal(scale=1.5, size=(n, *shape)).astype("float32")
    return _split(x.astype("float32"), y, test_size, seed)


def _missing(name: str, where: Path, expected: str) -> FileNotFoundError:
    return FileNotFoundError(
        f"{name} is not at {where} (expected {expected}). This loader never downloads: on a machine with "
        f"internet run `python -c 'import keras; keras.datasets.{name.lower()}.load_data()'` and copy "
        f"{KERAS_DATASETS} here, or pass path= to the folder or file that holds it.")


def load_mnist(path=None):
    """MNIST from a local ``mnist.npz`` (Keras's format), scaled to [0, 1] with shape ``(n, 28, 28, 1)``.

    Parameters
    ----------
    path : str or Path, optional
        The ``.npz`` file. Default: ``~/.keras/datasets/mnist.npz``.

    Raises
    ------
    FileNotFoundError
        When the file is absent, naming the path and how to get it.
    """
    file = Path(path) if path is not None else KERAS_DATASETS / "mnist.npz"
    if not file.is_file():
        raise _missing("MNIST", file, "mnist.npz with x_train, y_train, x_test, y_test")
    with np.load(file) as data:
        arrays = [data[k] for k in ("x_train", "y_train", "x_test", "y_test")]
    x_train, y_train, x_test, y_test = arrays
    scale = lambda a: (a.astype("float32") / 255.0)[..., None]
    return (scale(x_train), y_train.astype("int32")), (scale(x_test), y_test.astype("int32"))


def load_cifar10(path=None):
    """CIFAR-10 from the Python-pickle batches, scaled to [0, 1] with shape ``(n, 32, 32, 3)``.

    Parameters
    ----------
    path : str or Path, optional
        The ``cifar-10-batches-py`` folder (``data_batch_1`` … ``data_batch_5``,
        ``test_batch``). Default: Keras's cache, ``~/.keras/datasets/cifar-10-batches-py``.

    Raises
    ------
    FileNotFoundError
        When a batch file is absent, naming the path and how to get it.
    """
    folder = Path(path) if path is not None else KERAS_DATASETS / "cifar-10-batches-py"
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    if not all((folder / n).is_file() for n in names):
        raise _missing("CIFAR10", folder, "data_batch_1..5 and test_batch")

    def read(name):
        with open(folder / name, "rb") as fh:
            batch = pickle.load(fh, encoding="bytes")
        x = np.asarray(batch[b"data"], dtype="uint8").reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        return x.astype("float32") / 255.0, np.asarray(batch[b"labels"], dtype="int32")

    train = [read(n) for n in names[:5]]
    x_test, y_test = read(names[5])
    return (np.concatenate([t[0] for t in train]), np.concatenate([t[1] for t in train])), (x_test, y_test)
