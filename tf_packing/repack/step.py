"""The packed training step: every member's own Keras ``train_step`` in one ``tf.function``.

The step takes one shared batch, runs the shared preprocessing once, and calls
``model.train_step`` of each member on exactly the rows that member owns
(``offsets[i]:offsets[i] + counts[i]``). So each member's step *is* its Keras
training step: its compiled loss and metrics, sample weights, regularization
losses, loss scaling under mixed precision, batch statistics of its own rows
only (BatchNormalization), a custom ``train_step`` if the model overrides it.
Members share no variables, so tracing them together changes nothing but the
number of launches: TensorFlow runs the independent members' ops side by side.

Each member's ``train_step`` is traced into a ``tf.function`` of its own, kept
on the model (:func:`member_step`); the packed step calls those. So a pack of
models that trained before, in other packs, traces nothing of theirs again: only
the packed step's few ops around the calls (0.3 s for six digits members,
against 1.4 s for tracing them whole); :mod:`tf_packing.tuner.model_pool` makes that
the common case in a search. TensorFlow inlines the calls, so the ops still run
side by side.

A member with no rows in a step (it finished, and the pack was not re-traced
since) skips its ``train_step`` through a ``tf.cond``: its model is not touched.
The step is XLA-compiled when every member's ``model.jit_compile`` is true,
which is what ``model.fit`` would do for each of them (Keras turns it on by
default on GPUs).
"""

from __future__ import annotations

import tensorflow as tf

__all__ = ["build_step", "kept_on_model", "member_step", "prime"]

#: The attribute that keeps a model's traced ``train_step``.
_TRAIN_STEP = "_tf_packing_train_step"


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


def kept_on_model(model, attribute: str, make):
    """``make()``, made once per compilation of ``model`` and kept on the model as ``attribute``.

    Kept on the model itself, not in a table beside it, so it goes with the model (and with it its hold on
    the model's variables). Compiling the model again (another optimizer, loss or metrics) makes it anew, as
    Keras drops its own ``train_function`` then.
    """
    compiled = (id(getattr(model, "optimizer", None)), id(getattr(model, "_compile_config", None)))
    kept = getattr(model, attribute, None)
    if kept is None or kept[0] != compiled:
        kept = (compiled, make())
        setattr(model, attribute, kept)
    return kept[1]


def member_step(model):
    """``model.train_step`` as a ``tf.function`` kept on the model: traced once per input structure."""
    return kept_on_model(model, _TRAIN_STEP,
                         lambda: tf.function(lambda data: model.train_step(data), reduce_retracing=True))


def build_step(models, specs, *, jit_compile=False, preprocess=None, calls=None):
    """``step(x, offsets, counts, y, sample_weight) -> (logs, ...)`` for ``models``.

    Parameters
    ----------
    models : list of keras.Model
        The members' models, in the order of ``offsets``, ``counts`` and the logs returned.
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
        returns each member's logs in order (its metrics' results, as
        ``train_step`` returns them; zeros for a member with no rows). The step
        knows models, not names, so a later pack of the same models reuses it.
    """
    x_spec, y_spec, w_spec = specs
    index = tf.TensorSpec([None], tf.int32)
    signature = [x_spec, index, index] + [s for s in (y_spec, w_spec) if s is not None]
    layouts = {}  # member's position -> [(key, shape, dtype)] of its logs, recorded when its train_step is traced

    def member_logs(i, model, x, y, w, offset, count):
        rows = lambda t: t[offset:offset + count]
        data = tuple(tf.nest.map_structure(rows, part) for part in (x, y, w) if part is not None)

        def train():
            logs = member_step(model)(data if len(data) > 1 else data[0])
            keys = sorted(logs)
            values = [tf.convert_to_tensor(logs[k]) for k in keys]
            layouts[i] = [(k, v.shape, v.dtype) for k, v in zip(keys, values)]
            return values

        def skip():  # traced after train(): cond_v2 builds the true branch first
            return [tf.zeros(shape, dtype) for _, shape, dtype in layouts[i]]

        values = tf.cond(count > 0, train, skip)
        return {k: v for (k, _, _), v in zip(layouts[i], tf.nest.flatten(values))}

    @tf.function(input_signature=signature, jit_compile=jit_compile, reduce_retracing=True)
    def step(x, offsets, counts, *rest):
        rest = list(rest)
        y = rest.pop(0) if y_spec is not None else None
        w = rest.pop(0) if w_spec is not None else None
        if preprocess is not None:
            x = preprocess(x)
            if calls is not None:
                calls.assign_add(1)
        return tuple(member_logs(i, m, x, y, w, offsets[i], counts[i]) for i, m in enumerate(models))

    return step
