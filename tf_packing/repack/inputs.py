"""The shared input stream of a pack: arrays read by row index, or batches from a dataset.

Arrays (NumPy, or lists/dicts of them for models with several inputs) stay on
the host; each step gathers the rows of its shared batch, so the data need not
fit on the device and members can take different batch sizes (pad/slice,
:mod:`tf_packing.repack.batching`). A ``tf.data.Dataset`` or any re-iterable of
``(x, y)`` / ``(x, y, sample_weight)`` batches is read batch by batch, and, as
with ``model.fit(dataset)``, every member trains on every batch: the dataset
decides the batch size.
"""

from __future__ import annotations

import itertools

import numpy as np
import tensorflow as tf

__all__ = ["ArrayData", "StreamData", "as_data", "batch_spec"]


class ArrayData:
    """Inputs, targets and optional sample weights held as host arrays, read by row index."""

    def __init__(self, x, y, sample_weight=None):
        self.source = x  # what fit was given: a later fit on the same object may resume
        self.x = tf.nest.map_structure(np.asarray, x)
        self.y = None if y is None else tf.nest.map_structure(np.asarray, y)
        self.sample_weight = None if sample_weight is None else np.asarray(sample_weight)
        sizes = {f"x{'' if i == 0 else f'[{i}]'}": len(a) for i, a in enumerate(tf.nest.flatten(self.x))}
        if self.y is not None:
            sizes.update({f"y{'' if i == 0 else f'[{i}]'}": len(a) for i, a in enumerate(tf.nest.flatten(self.y))})
        if self.sample_weight is not None:
            sizes["sample_weight"] = len(self.sample_weight)
        if len(set(sizes.values())) != 1:
            raise ValueError(f"the training arrays have different numbers of rows: {sizes}. Pass x, y and "
                             "sample_weight with one row per example.")
        self.n_examples = next(iter(sizes.values()))
        if self.n_examples == 0:
            raise ValueError("the training data has no rows.")

    def take(self, indices: np.ndarray):
        """The rows ``indices`` as one ``(x, y, sample_weight)`` batch (sample_weight may be None)."""
        pick = lambda a: np.take(a, indices, axis=0)
        return (tf.nest.map_structure(pick, self.x), None if self.y is None else tf.nest.map_structure(pick, self.y),
                None if self.sample_weight is None else pick(self.sample_weight))


class StreamData:
    """Batches from a ``tf.data.Dataset`` or a re-iterable of batches, one pass per epoch.

    Parameters
    ----------
    source : tf.data.Dataset or iterable
        Yields ``x``, ``(x, y)`` or ``(x, y, sample_weight)`` batches.
    steps_per_epoch : int, optional
        Batches per epoch, for endless sources (read on from where the last
        epoch stopped, as Keras does); default: one full pass per epoch.
    """

    def __init__(self, source, steps_per_epoch=None):
        self.source = source
        self.steps_per_epoch = steps_per_epoch
        self._iterator = None
        self._passes = 0

    def epoch(self):
        """An iterator over the next epoch's ``(x, y, sample_weight)`` batches."""
        if self.steps_per_epoch is not None:
            if self._iterator is None:
                self._iterator = _batches(self.source)
            return (_unpack(b) for b in itertools.islice(self._iterator, self.steps_per_epoch))
        iterator = _batches(self.source)
        if self._passes and iterator is self.source:
            raise ValueError("the training generator was used up after one epoch. Pass a tf.data.Dataset, a "
                             "re-iterable (e.g. a list or a keras.utils.PyDataset), or steps_per_epoch with an "
                             "endless generator.")
        self._passes += 1
        return (_unpack(b) for b in iterator)


def _batches(source):
    """Iterate ``source``: a keras ``PyDataset`` by index, anything else as an iterable."""
    if hasattr(source, "__getitem__") and hasattr(source, "num_batches"):
        return (source[i] for i in range(source.num_batches or len(source)))
    return iter(source)


def _unpack(batch):
    """``(x, y, sample_weight)`` of one batch, as Keras unpacks it."""
    if isinstance(batch, tuple) and len(batch) in (2, 3):
        return (batch[0], batch[1], batch[2] if len(batch) == 3 else None)
    if isinstance(batch, tuple) and len(batch) == 1:
        return batch[0], None, None
    return batch, None, None


def as_data(x, y=None, sample_weight=None, steps_per_epoch=None):
    """Wrap ``fit``'s arguments: arrays become :class:`ArrayData`, datasets and generators :class:`StreamData`."""
    if _is_stream(x, y):
        if y is not None or sample_weight is not None:
            raise ValueError("y and sample_weight must be None when x is a dataset or a generator: its batches "
                             "carry (x, y) or (x, y, sample_weight), as with model.fit.")
        return StreamData(x, steps_per_epoch)
    if steps_per_epoch is not None:
        raise ValueError("steps_per_epoch applies to datasets and generators only; arrays are read once per "
                         "epoch.")
    return ArrayData(x, y, sample_weight)


def _is_stream(x, y) -> bool:
    """Whether ``x`` yields batches (a dataset, generator or list of batch tuples) rather than being the data."""
    if isinstance(x, tf.data.Dataset):
        return True
    if isinstance(x, (np.ndarray, tf.Tensor, dict)):
        return False
    if isinstance(x, (list, tuple)):  # the inputs of a multi-input model, or a list of (x, y) batches
        return y is None and bool(x) and all(isinstance(b, tuple) for b in x)
    return hasattr(x, "__iter__") or hasattr(x, "__getitem__")


def batch_spec(batch):
    """The ``tf.TensorSpec`` structure of a batch with any number of rows (None for absent parts)."""
    def spec(t):
        t = tf.convert_to_tensor(t)
        return tf.TensorSpec([None, *t.shape[1:]], t.dtype)

    return tuple(None if part is None else tf.nest.map_structure(spec, part) for part in batch)
