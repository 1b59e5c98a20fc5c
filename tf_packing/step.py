"""The packed training step: every member's own Keras ``train_step`` in one ``tf.function``.

The step takes one shared batch, runs the shared preprocessing once, and calls
``model.train_step`` of each member on exactly the rows that member owns
(``offsets[i]:offsets[i] + counts[i]``). So each member's step *is* its Keras
training step: its compiled loss and metrics, sample weights, regularization
losses, loss scaling under mixed precision, batch statistics of its own rows
only (BatchNormalization), a custom ``train_step`` if the model overrides it.
Members share no variables, so tracing them together changes nothing but the
number of launches: TensorFlow runs the independent members' ops side by side.

A member with no rows in a step (it finished, and the pack was not re-traced
since) skips its ``train_step`` through a ``tf.cond``: its model is not touched.
The step is XLA-compiled when every member's ``model.jit_compile`` is true,
which is what ``model.fit`` would do for each of them (Keras turns it on by
default on GPUs).
"""

from __future__ import annotations

import tensorflow as tf

__all__ = ["build_step", "prime"]


def prime(model, batch) -> None:
    """Build ``model``'s compiled loss and metrics for ``batch``'s shapes, as ``model.fit`` does first.

    Keras creates metric variables lazily; inside the packed ``tf.function`` they
    would be created during tracing, which XLA and ``tf.cond`` do not allow.
    """
    symbolic_build = getattr(model, "_symbolic_build", None)
    if symbolic_build is None:
        raise RuntimeError(f"this Keras ({__import__('keras').__version__}) has no Model._symbolic_build; "
                           "tf_packing needs Keras 3.")
    symbolic_build(data_batch=tuple(part for part in batch if part is not None) if batch[2] is None else batch)


def build_step(members, specs, *, jit_compile=False, preprocess=None, calls=None):
    """``step(x, y, sample_weight, offsets, counts) -> {name: logs}`` for ``members``.

    Parameters
    ----------
    members : list of Member
        The members, in the order of ``offsets`` and ``counts``.
    specs : tuple
        ``(x_spec, y_spec, sample_weight_spec)`` of a batch with any number of
        rows; ``None`` where the data has no such part.
    jit_compile : bool, default=False
        Compile the step with XLA.
    preprocess : callable, optional
        Applied once to the shared inputs.
    calls : tf.Variable, optional
        Incremented each time ``preprocess`` runs.

    Returns
    -------
    tf.types.experimental.PolymorphicFunction
        Called with the shared batch and each member's offset and row count;
        returns each member's logs (its metrics' results, as ``train_step``
        returns them; zeros for a member with no rows).
    """
    x_spec, y_spec, w_spec = specs
    index = tf.TensorSpec([None], tf.int32)
    signature = [x_spec, index, index] + [s for s in (y_spec, w_spec) if s is not None]
    layouts = {}  # member name -> [(key, shape, dtype)] of its logs, recorded when its train_step is traced

    def member_logs(member, x, y, w, offset, count):
        rows = lambda t: t[offset:offset + count]
        data = tuple(tf.nest.map_structure(rows, part) for part in (x, y, w) if part is not None)

        def train():
            logs = member.model.train_step(data if len(data) > 1 else data[0])
            keys = sorted(logs)
            values = [tf.convert_to_tensor(logs[k]) for k in keys]
            layouts[member.name] = [(k, v.shape, v.dtype) for k, v in zip(keys, values)]
            return values

        def skip():  # traced after train(): cond_v2 builds the true branch first
            return [tf.zeros(shape, dtype) for _, shape, dtype in layouts[member.name]]

        values = tf.cond(count > 0, train, skip)
        return {k: v for (k, _, _), v in zip(layouts[member.name], tf.nest.flatten(values))}

    @tf.function(input_signature=signature, jit_compile=jit_compile, reduce_retracing=True)
    def step(x, offsets, counts, *rest):
        rest = list(rest)
        y = rest.pop(0) if y_spec is not None else None
        w = rest.pop(0) if w_spec is not None else None
        if preprocess is not None:
            x = preprocess(x)
            if calls is not None:
                calls.assign_add(1)
        return {m.name: member_logs(m, x, y, w, offsets[i], counts[i]) for i, m in enumerate(members)}

    return step
