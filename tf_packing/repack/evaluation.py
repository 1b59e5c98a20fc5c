"""``model.evaluate`` over host arrays, without its per-call cost.

A tuner scores many small models many times: on digits, ``model.evaluate`` takes
about 55 ms a call, of which 45 ms build its ``tf.data`` pipeline and callbacks,
while the validation batches themselves take 10 ms. :func:`evaluate` runs the
model's own ``test_step`` on the same consecutive batches, in the same order,
through one ``tf.function`` kept on the model (traced once per model, however
many times it is scored), so its results equal ``model.evaluate``'s.
Anything but arrays (a dataset, a generator) goes to ``model.evaluate`` itself.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from .step import kept_on_model

__all__ = ["evaluate"]

#: The attribute that keeps a model's traced ``test_step``.
_TEST_STEP = "_tf_packing_test_step"


def _is_array(value) -> bool:
    return all(isinstance(a, np.ndarray) for a in tf.nest.flatten(value))


def _floatx(array: np.ndarray) -> np.ndarray:
    """Floats in Keras's float type, as ``model.evaluate``'s data adapter casts them."""
    if np.issubdtype(array.dtype, np.floating) and array.dtype != np.dtype(keras.backend.floatx()):
        return array.astype(keras.backend.floatx())
    return array


def _test_step(model, data):
    """``model.test_step`` traced for batches shaped like ``data`` with any number of rows, kept on the model."""
    specs = tf.nest.map_structure(lambda a: tf.TensorSpec([None, *a.shape[1:]], tf.as_dtype(a.dtype)), data)
    steps = kept_on_model(model, _TEST_STEP, dict)
    key = str(specs)
    if key not in steps:
        traced = tf.function(lambda batch: model.test_step(batch), jit_compile=bool(getattr(model, "jit_compile", False)))
        steps[key] = traced.get_concrete_function(specs)
    return steps[key]


def evaluate(model, x, y=None, *, batch_size=None, sample_weight=None) -> dict:
    """``model.evaluate(x, y, batch_size=..., sample_weight=..., verbose=0, return_dict=True)``.

    Parameters
    ----------
    model : keras.Model
        A compiled model.
    x, y, sample_weight
        Arrays (a list or dict of arrays for several inputs), or anything ``model.evaluate`` takes.
    batch_size : int, optional
        Default: Keras's 32.

    Returns
    -------
    dict of str to float
        The loss and compiled metrics, as ``model.evaluate`` returns them.
    """
    if not (_is_array(x) and (y is None or _is_array(y)) and (sample_weight is None or _is_array(sample_weight))):
        return model.evaluate(x, y, batch_size=batch_size, sample_weight=sample_weight, verbose=0, return_dict=True)
    if y is None and sample_weight is not None:
        raise ValueError("sample_weight needs y: pass the targets the weights apply to.")
    rows = len(tf.nest.flatten(x)[0])
    if rows == 0:
        raise ValueError("the evaluation data has no rows.")
    size = int(batch_size or 32)
    data = keras.utils.pack_x_y_sample_weight(*(None if p is None else tf.nest.map_structure(_floatx, p)
                                                for p in (x, y, sample_weight)))
    step = _test_step(model, data)
    model.reset_metrics()
    logs = {}
    for start in range(0, rows, size):
        logs = step(tf.nest.map_structure(lambda a: tf.constant(a[start:start + size]), data))
    results = model._get_metrics_result_or_logs(logs)
    return {k: float(v) if np.ndim(v) == 0 else np.asarray(v) for k, v in results.items()}
