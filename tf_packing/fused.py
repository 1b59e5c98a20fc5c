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

__all__ = ["FirstLayerFused", "FusedForward", "can_fuse", "can_fuse_first"]

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


_ELEMENTWISE = {"relu", "linear", "tanh", "sigmoid", "elu", "selu", "gelu", "swish", "silu", "leaky_relu",
                "softplus", "exponential", "hard_sigmoid", "relu6", "mish"}


def _split_first(model):
    """``(pass-through layers, first Dense/Conv2D, remaining layers)`` of a Sequential, or None."""
    if not isinstance(model, keras.Sequential):
        return None
    layers = list(model.layers)
    for i, layer in enumerate(layers):
        if isinstance(layer, (keras.layers.Dense, keras.layers.Conv2D)):
            return layers[:i], layer, layers[i + 1:]
        if not isinstance(layer, _PASS_THROUGH):
            return None
    return None


def _first_signature(layer):
    act = keras.activations.serialize(layer.activation)
    act = act if isinstance(act, str) else act.get("config", {}).get("name", str(act))
    sig = (type(layer).__name__, tuple(layer.kernel.shape), layer.use_bias, act)
    if isinstance(layer, keras.layers.Conv2D):
        sig += (tuple(layer.strides), layer.padding, tuple(layer.dilation_rate), layer.data_format, layer.groups)
    return sig


def can_fuse_first(models, *, conv_only: bool = False) -> bool:
    """Whether ``models`` (two or more Sequentials) start with the same Dense or Conv2D layer.

    The layer's activation must act element-wise (so that it commutes with
    splitting the channels) and a Conv2D must be channels-last and ungrouped.
    ``conv_only`` accepts a shared first Conv2D only.
    """
    if len(models) < 2:
        return False
    parts = [_split_first(m) for m in models]
    if any(p is None for p in parts):
        return False
    first = _first_signature(parts[0][1])
    if conv_only and first[0] != "Conv2D":
        return False
    if first[3] not in _ELEMENTWISE or (first[0] == "Conv2D" and (first[-2] != "channels_last" or first[-1] != 1)):
        return False
    return all(_first_signature(p[1]) == first and [type(x) for x in p[0]] == [type(x) for x in parts[0][0]]
               for p in parts[1:])


class FirstLayerFused:
    """Forward pass of members whose first Dense/Conv2D layers match: that layer once, the rest apart.

    Calling it on the shared batch returns a list with each member's predictions.
    """

    def __init__(self, models):
        if not can_fuse_first(models):
            raise ValueError("FirstLayerFused needs two or more Sequential models that start with the same "
                             "Dense or Conv2D layer (element-wise activation). Check can_fuse_first(models).")
        parts = [_split_first(m) for m in models]
        self.before = parts[0][0]
        self.firsts = [p[1] for p in parts]
        self.rests = [p[2] for p in parts]

    def __call__(self, x, training=False):
        for layer in self.before:  # stateless (InputLayer, Flatten): run once for all
            x = layer(x)
        lead = self.firsts[0]
        x = tf.cast(x, lead.kernel.dtype)
        kernel = tf.concat([tf.convert_to_tensor(f.kernel) for f in self.firsts], axis=-1)
        if isinstance(lead, keras.layers.Conv2D):
            h = tf.nn.conv2d(x, kernel, strides=list(lead.strides), padding=lead.padding.upper(),
                             dilations=list(lead.dilation_rate))
        else:
            h = tf.matmul(x, kernel)
        if lead.use_bias:
            h = h + tf.concat([tf.convert_to_tensor(f.bias) for f in self.firsts], axis=-1)
        h = lead.activation(h)
        outputs = []
        for part, rest in zip(tf.split(h, len(self.firsts), axis=-1), self.rests):
            for layer in rest:
                part = layer(part, training=training)
            outputs.append(part)
        return outputs
