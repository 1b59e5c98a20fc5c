"""The fused training step of a pack: one ``tf.function`` for every member.

The step gathers the shared batch once, runs the shared preprocessing once,
gives each member its static ``b_i`` rows from its offset (pad/slice), masks the
rows it does not own (a pass tail, or a ghost with none), differentiates the sum
of the members' losses once and lets each member's own optimizer apply its own
gradients. ``d loss_j / d theta_i = 0`` for ``i != j``, so every member gets the
gradients it would get alone.
"""

from __future__ import annotations

import keras
import tensorflow as tf

__all__ = ["build_step", "per_example_loss"]


def per_example_loss(loss):
    """A member's compiled loss as a function returning one value per example."""
    if isinstance(loss, keras.losses.Loss):
        return loss.call
    fn = keras.losses.get(loss)
    if fn is None:
        raise ValueError(f"loss {loss!r} is not a Keras loss. Compile each member with a loss name, "
                         "a keras.losses.Loss or a function (y_true, y_pred) -> per-example loss.")
    return fn.call if isinstance(fn, keras.losses.Loss) else fn


def build_step(members, specs, *, preprocess=None, calls=None, fused=None):
    """Trace-ready step ``step(xs, ys, idx, offsets, counts) -> losses`` for ``members``.

    Parameters
    ----------
    members : list of Member
        The members, in the order of ``offsets``, ``counts`` and the returned losses.
    specs : list of tf.TensorSpec
        Specs of the whole inputs and targets (any number of rows).
    preprocess : callable, optional
        Applied once to the shared batch.
    calls : tf.Variable, optional
        Incremented each time ``preprocess`` runs.
    fused : FusedForward, optional
        Forward pass of all members as stacked products (members then share rows).

    Returns
    -------
    tf.types.experimental.PolymorphicFunction
        Takes the data, the row indices of the padded shared batch, and each
        member's offset and row count; returns each member's loss.
    """
    variables = [m.model.trainable_variables for m in members]
    index = tf.TensorSpec([None], tf.int32)  # any padded size: one trace per membership

    @tf.function(autograph=False, input_signature=[*specs, index, index, index])  # static loops only
    def step(xs, ys, idx, offsets, counts):
        x, y = tf.gather(xs, idx), tf.gather(ys, idx)
        if preprocess is not None:
            x = preprocess(x)
            if calls is not None:
                calls.assign_add(1)
        with tf.GradientTape() as tape:
            preds = fused(x[:members[0].batch_size], training=True) if fused is not None else None
            losses = []
            for i, m in enumerate(members):
                b = m.batch_size
                xi = tf.ensure_shape(x[offsets[i]:offsets[i] + b], [b] + list(x.shape[1:]))
                yi = tf.ensure_shape(y[offsets[i]:offsets[i] + b], [b] + list(y.shape[1:]))
                pred = preds[i] if fused is not None else m.model(xi, training=True)
                per_example = tf.reshape(m.loss_fn(yi, pred), [b, -1])
                mask = tf.cast(tf.range(b) < counts[i], per_example.dtype)[:, None]
                rows_used = tf.cast(tf.maximum(counts[i], 1), per_example.dtype)  # a ghost has 0 rows
                loss = tf.reduce_sum(per_example * mask) / (
                    rows_used * tf.cast(tf.shape(per_example)[1], per_example.dtype))
                if m.model.losses:
                    loss = loss + tf.add_n(m.model.losses)
                losses.append(loss)
            total = tf.add_n(losses)
        grads = tape.gradient(total, variables)
        for m, g, v in zip(members, grads, variables):
            m.model.optimizer.apply(g, v)
        return tf.stack(losses)

    return step
