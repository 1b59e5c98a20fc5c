"""Stacked-weight fusion of same-architecture Dense members (a horizontal fusion, as in HFTA).

When every member of a pack is the same stack of ``Dense`` layers and all read
the same rows, their ``M`` matrix products per layer can run as one product:
the first layer multiplies the shared batch by the members' kernels
concatenated to ``(d_in, M * d_out)`` (one wide GEMM), and every later layer
multiplies ``(M, B, d)`` activations by kernels stacked to ``(M, d_in, d_out)``
(one batched GEMM). The members keep their own
variables and optimizers; the stack is rebuilt from the variables every step and
the gradient flows back through it to each member's own kernel, so the
isolation guarantee still holds (up to float rounding of the batched product).
"""

from __future__ import annotations

import keras
import tensorflow as tf

__all__ = ["FusedForward", "can_fuse"]

_PASS_THROUGH = (keras.layers.InputLayer, keras.layers.Flatten)


def _dense_layers(model):
    """The Dense layers of a Sequential model, or None when it holds anything else."""
    if not isinstance(model, keras.Sequential):
        return None
    layers = []
    for layer in model.layers:
        if isinstance(layer, keras.layers.Dense):
            layers.append(layer)
        elif not isinstance(layer, _PASS_THROUGH):
            return None
    return layers or None


def _signature(layer):
    return (tuple(layer.kernel.shape), layer.use_bias, keras.activations.serialize(layer.activation))


def can_fuse(models) -> bool:
    """Whether ``models`` are all the same Sequential stack of Dense layers (two or more of them)."""
    if len(models) < 2:
        return False
    stacks = [_dense_layers(m) for m in models]
    if any(s is None for s in stacks):
        return False
    first = [_signature(layer) for layer in stacks[0]]
    return all([_signature(layer) for layer in s] == first for s in stacks[1:])


class FusedForward:
    """Forward pass of ``M`` identical Dense stacks as batched products.

    Parameters
    ----------
    models : list of keras.Sequential
        Members accepted by :func:`can_fuse`.

    Calling it on a shared batch ``x`` of shape ``(B, ...)`` returns a tensor
    of shape ``(M, B, units)``: member ``i``'s predictions are ``out[i]``.
    """

    def __init__(self, models):
        if not can_fuse(models):
            raise ValueError("FusedForward needs two or more Sequential models with identical Dense layers. "
                             "Check can_fuse(models) first, or train them unfused.")
        self.layers = list(zip(*[_dense_layers(m) for m in models]))

    def __call__(self, x, training=False):
        h = tf.cast(tf.reshape(x, [tf.shape(x)[0], -1]), self.layers[0][0].kernel.dtype)
        m = len(self.layers[0])
        for depth, group in enumerate(self.layers):
            kernels = [tf.convert_to_tensor(layer.kernel) for layer in group]
            units = kernels[0].shape[-1]
            if depth == 0:
                # every member reads the same rows: one (B, d) x (d, M*units) product
                h = tf.matmul(h, tf.concat(kernels, axis=1))
                h = tf.transpose(tf.reshape(h, [-1, m, units]), [1, 0, 2])  # (M, B, units)
            else:
                h = tf.matmul(h, tf.stack(kernels))  # (M, B, d) x (M, d, units): one batched product
            if group[0].use_bias:
                h = h + tf.stack([tf.convert_to_tensor(layer.bias) for layer in group])[:, None, :]
            h = group[0].activation(h)
        return h
