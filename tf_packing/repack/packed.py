"""The packed unit: several compiled Keras models trained by one step on one input stream.

``pack([model_a, model_b])`` returns a :class:`PackedModel`. Each step reads one
shared batch (gathered once on the host, preprocessed once on the device), and
one ``tf.function`` runs every member's own ``model.train_step`` on the rows
that member owns (:mod:`tf_packing.repack.step`). So each member trains exactly as
``model.fit`` would train it alone: same batches, loss, metrics, callbacks,
validation and ``History`` (:mod:`tf_packing.repack.member_run`), only side by side.

Members may differ in batch size (pad/slice over array data,
:mod:`tf_packing.repack.batching`) and in epochs; members that finish stay in the pack
(``evaluate`` and ``predict`` cover them) unless queued models take their place
(thesis L375-L379), in which case they are freed to host checkpoints.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field

import keras
import numpy as np
import tensorflow as tf

from .batching import BatchPlanner, steps_per_epoch
from .checkpoint import MemberCheckpoint, free, load
from .evaluation import evaluate
from .inputs import ArrayData, as_data, batch_spec
from .member_run import MemberRun, check_callback_names, member_callbacks
from .step import build_step, prime

__all__ = ["Member", "PackedModel", "pack"]

log = logging.getLogger(__name__)

#: Keras's default batch size for array data.
DEFAULT_BATCH_SIZE = 32


@dataclass
class Member:
    """One model in a pack, with its batch size, epoch budget and progress.

    Attributes
    ----------
    batch_size : int or None
        Rows per step over array data (None: Keras's default, 32). Datasets
        bring their own batches.
    losses : list of float
        Training loss of every step the member took, in order.
    """

    name: str
    model: object
    batch_size: int | None = None
    epochs: int = 1
    start_epoch: int = 0
    losses: list = field(default_factory=list)

    def __post_init__(self):
        if getattr(self.model, "optimizer", None) is None or getattr(self.model, "loss", None) is None:
            raise ValueError(f"model {self.name!r} is not compiled. Call model.compile(optimizer=..., loss=...) "
                             "first: every member keeps its own optimizer, learning rate and loss.")
        if not self.model.built:
            raise ValueError(f"model {self.name!r} is not built. Give it a keras.Input or call it once on data.")
        if self.batch_size is not None and (not isinstance(self.batch_size, (int, np.integer)) or self.batch_size < 1):
            raise ValueError(f"batch_size of member {self.name!r} must be an integer >= 1. Got {self.batch_size!r}.")


class PackedModel:
    """Several Keras models trained together, in lock step, from one shared input stream.

    Parameters
    ----------
    members : list of Member
        The models to train.
    preprocess : callable, optional
        A function applied to each shared batch's inputs inside the step, once
        for the whole pack (decoding, scaling, augmentation).
    device : str, optional
        TensorFlow device for the step and the members' optimizer state.
    pool : ModelPool, optional
        Keeps the packed steps over its models for later packs of the same models
        (:mod:`tf_packing.tuner.model_pool`); without one, a step lives as long as the pack.

    Attributes
    ----------
    checkpoints_ : dict of str to MemberCheckpoint
        Members freed during :meth:`fit` to make room for queued ones.
    diverged_ : dict of str to int
        Members stopped because their loss was not finite, with the epoch.
    steps_ : int
        Packed steps taken.
    step_times_ : list of float
        Wall seconds of every packed step (excluding loads and frees).
    """

    def __init__(self, members, *, preprocess=None, device=None, pool=None):
        self.members = {}
        self.pool = pool
        self.preprocess = preprocess
        self.device = device
        self.checkpoints_ = {}
        self.diverged_ = {}
        self.steps_ = 0
        self.step_times_ = []
        self._calls = tf.Variable(0, dtype=tf.int64, trainable=False, name="preprocess_calls")
        self._steps = {}
        self._run = None
        for member in members:
            self.add(member)

    @property
    def preprocess_calls_(self) -> int:
        """How many times ``preprocess`` ran (once per packed step)."""
        return int(self._calls.numpy())

    @property
    def losses_(self) -> dict:
        """Per-step training losses of every member, packed or freed."""
        out = {name: list(ckpt.losses) for name, ckpt in self.checkpoints_.items()}
        out.update({name: list(m.losses) for name, m in self.members.items()})
        return out

    # -- membership -----------------------------------------------------------------------
    def add(self, member: Member, checkpoint: MemberCheckpoint | None = None) -> None:
        """Load ``member`` into the pack (during :meth:`fit` too: it joins at the next step)."""
        if member.name in self.members:
            raise ValueError(f"a member named {member.name!r} is already packed. Pass unique names.")
        _check_same_inputs(member, self.members.values())
        load(member.model, self.device, checkpoint)
        if checkpoint is not None:
            member.start_epoch, member.losses = checkpoint.epochs_done, list(checkpoint.losses)
        self.members[member.name] = member
        if self._run is not None:
            self._run.join(member)
        log.info("loaded member %s (batch %s, %d epochs) into a pack of %d",
                 member.name, member.batch_size, member.epochs, len(self.members))

    def load(self, model, *, batch_size: int | None = None, epochs: int = 1, name: str | None = None,
             checkpoint: MemberCheckpoint | None = None) -> Member:
        """Load ``model`` as a new member; resume it from ``checkpoint`` when given."""
        member = Member(name or model.name, model, batch_size, epochs)
        self.add(member, checkpoint)
        return member

    def free(self, name: str) -> MemberCheckpoint:
        """Remove member ``name`` and return its checkpoint (weights, optimizer state, progress).

        The pack keeps no reference to the model afterwards (the traced step that
        held it is dropped), so its device memory is released once the caller
        drops the model too.
        """
        if name not in self.members:
            raise KeyError(f"no member named {name!r}; the pack holds {sorted(self.members)}.")
        done = self._run.leave(name) if self._run is not None else self.members[name].start_epoch
        member = self.members.pop(name)
        self._steps = {k: v for k, v in self._steps.items() if id(member.model) not in k[0]}
        log.info("freed member %s after %d epochs", name, done)
        return free(member.model, self.device, epochs_done=done, losses=member.losses)

    # -- training -------------------------------------------------------------------------
    def fit(self, x=None, y=None, *, sample_weight=None, validation_data=None, validation_batch_size=None,
            callbacks=None, shuffle=True, seed=0, steps_per_epoch=None, verbose="auto", queue=(),
            share_rows=False, record=False, max_steps=None, on_step=None) -> dict:
        """Train every member for its epochs, as ``model.fit`` would train each alone.

        Parameters
        ----------
        x, y, sample_weight
            Arrays (a list or dict of arrays for several inputs), or a
            ``tf.data.Dataset`` / re-iterable of ``(x, y[, sample_weight])``
            batches as ``x`` alone. Over arrays each member takes its own batch
            size; a dataset's batches go to every member whole.
        validation_data : tuple or dataset, optional
            Evaluated for each member at each of its epoch ends (``val_*`` logs).
        validation_batch_size : int, optional
        callbacks : list or dict of str to list, optional
            Keras callbacks: a list is copied for every member; a dict gives
            each member its own (e.g. ``EarlyStopping``, ``ModelCheckpoint``).
        shuffle : bool, default=True
            Draw a new order of the array rows every epoch (the same for every member).
        seed : int, default=0
            Seed of those orders.
        steps_per_epoch : int, optional
            Batches per epoch of an endless dataset or generator.
        verbose : {"auto", 0, 1, 2}, default="auto"
            0 silent, 1 a progress bar and one line per member epoch, 2 the lines only.
        queue : iterable of Member or callable, default=()
            Members to load, in order, each time a member finishes; a callable
            builds its member when it is loaded. The finished member is freed
            to make room (its checkpoint goes to ``checkpoints_``).
        share_rows : bool, default=False
            Over arrays, members take ``model.fit``'s consecutive batches of the
            epoch order; True shares rows between members of different batch
            sizes instead (Repack's pad/slice, smaller shared batches, other
            batch compositions; see :mod:`tf_packing.repack.batching`).
        record : bool, default=False
            Keep each member's row indices in ``planner_.history_`` (arrays).
        max_steps : int, optional
            Stop after this many packed steps; a later ``fit`` with the same
            arrays continues where this one stopped.
        on_step : callable, optional
            ``on_step(pack, plan)`` after every step, before finished members
            leave; it may ``evaluate``, ``add`` or ``free`` members.

        Returns
        -------
        dict of str to keras.callbacks.History
            Every member's per-epoch logs, freed members included.

        Raises
        ------
        ValueError
            For data the members cannot share, or callbacks that cannot be copied.
        """
        if self._run is None or not self._run.resumable(x):
            self._run = None
            data = as_data(x, y, sample_weight, steps_per_epoch)
            planner = BatchPlanner(data.n_examples, shuffle=shuffle, seed=seed, record=record,
                                   share_rows=share_rows) if isinstance(data, ArrayData) else None
            self._run = _Run(self, data, planner, validation_data, validation_batch_size, callbacks,
                             1 if verbose == "auto" else verbose)
        run = self._run
        run.enqueue(queue)
        finished = run.train(max_steps, on_step)
        if finished:
            self._run = None
        return run.histories()

    def _step(self, batch, takes: dict) -> dict:
        """One packed step over ``batch``; ``takes`` maps member names to (offset, rows)."""
        names = tuple(sorted(self.members, key=lambda n: id(self.members[n].model)))  # the same models, the same step
        models = tuple(id(self.members[n].model) for n in names)
        specs = batch_spec(batch)
        key = (models, str(specs), self.device)
        if key not in self._steps:
            self._steps = {k: v for k, v in self._steps.items() if k[0] == models}  # drop stale traces
            pool = self.pool if self.preprocess is None else None  # a kept step would count another pack's calls
            kept = pool.step(key) if pool is not None else None
            self._steps[key] = kept or self._build_step(names, batch, specs)
            if kept is None and pool is not None:
                pool.keep_step(key, self._steps[key])
        offsets = np.array([takes.get(n, (0, 0))[0] for n in names], dtype=np.int32)
        counts = np.array([takes.get(n, (0, 0))[1] for n in names], dtype=np.int32)
        x, y, w = batch
        start = time.perf_counter()
        with self._device():
            logs = dict(zip(names, self._steps[key](x, offsets, counts, *[p for p in (y, w) if p is not None])))
        logs = {n: {k: v.numpy() for k, v in logs[n].items()} for n in takes}
        self.step_times_.append(time.perf_counter() - start)
        self.steps_ += 1
        return logs

    def _build_step(self, names, batch, specs):
        for n in names:
            prime(self.members[n].model, batch)
        jit = all(bool(getattr(self.members[n].model, "jit_compile", False)) for n in names)
        with self._device():
            step = build_step([self.members[n].model for n in names], specs, jit_compile=jit, preprocess=self.preprocess,
                              calls=self._calls)
        log.debug("built packed step for %s (XLA: %s)", names, jit)
        return step

    def _device(self):
        return tf.device(self.device) if self.device else contextlib.nullcontext()

    # -- inference ------------------------------------------------------------------------
    def evaluate(self, x, y=None, *, batch_size=None, sample_weight=None, names=None) -> dict:
        """Each member's ``model.evaluate(..., return_dict=True)``: loss and compiled metrics, by name."""
        return {n: evaluate(self.members[n].model, x, y, batch_size=batch_size or self.members[n].batch_size,
                            sample_weight=sample_weight)
                for n in self._names(names)}

    def predict(self, x, *, batch_size=None, names=None) -> dict:
        """Each member's ``model.predict(x)``, by name."""
        return {n: self.members[n].model.predict(x, batch_size=batch_size or self.members[n].batch_size, verbose=0)
                for n in self._names(names)}

    def _names(self, names) -> list:
        names = sorted(self.members) if names is None else list(names)
        missing = sorted(set(names) - set(self.members))
        if missing:
            raise KeyError(f"no members named {missing}; the pack holds {sorted(self.members)}.")
        return names


class _Run:
    """One ``fit`` of a pack: the data, the plan and each member's :class:`MemberRun`."""

    def __init__(self, pack, data, planner, validation, validation_batch_size, callbacks, verbose):
        self.pack, self.data, self.planner, self.verbose = pack, data, planner, verbose
        self.queue = []
        self.validation, self.validation_batch_size = validation, validation_batch_size
        self.callbacks_spec = callbacks
        self.runs: dict = {}
        self.histories_: dict = {}
        self.arrays = planner is not None
        pack.planner_ = planner
        self.bar = keras.utils.Progbar(None, verbose=1, unit_name="step") if verbose == 1 else None
        for member in pack.members.values():
            self.join(member)

    def enqueue(self, queue) -> None:
        """Queue members to load as others finish; load the first at once into an empty pack."""
        queue = list(queue)
        if queue and not self.arrays:
            raise ValueError("queue needs array data: a member loaded while a dataset's epoch is under way would "
                             "start mid-epoch. Fit the queued models in a pack of their own.")
        self.queue.extend(queue)
        if self.queue and not self.runs:
            self.pack.add(self._next_queued())  # joins this run through PackedModel.add

    def resumable(self, x) -> bool:
        """Whether a new ``fit(x, ...)`` continues this one (stopped by ``max_steps``, same arrays)."""
        return self.arrays and x is not None and x is self.data.source

    def join(self, member) -> None:
        if not self.arrays and member.batch_size is not None:
            raise ValueError(f"member {member.name!r} has batch_size={member.batch_size}, but a dataset or "
                             "generator brings its own batches (as with model.fit). Pack it with batch_sizes=None.")
        batch = member.batch_size or DEFAULT_BATCH_SIZE
        steps = steps_per_epoch(self.data.n_examples, batch) if self.arrays else self.data.steps_per_epoch
        cbs = member_callbacks(self.callbacks_spec, member.name)
        run = MemberRun(member, cbs, epochs=member.start_epoch + member.epochs, steps_per_epoch=steps,
                        validation=self.validation, validation_batch_size=self.validation_batch_size)
        self.runs[member.name] = run
        if self.arrays:
            self.planner.add(member.name, batch, epochs=member.epochs, start_epoch=member.start_epoch)
        run.begin()

    def leave(self, name) -> int:
        """A member is freed: end its training; returns the epochs it completed."""
        run = self.runs.pop(name, None)
        if run is None:
            return self.pack.members[name].start_epoch
        if self.arrays and name in self.planner.members:
            self.planner.remove(name)
        run.end()
        self.histories_[name] = run.history
        run.history.set_model(None)  # a freed model must not stay alive through its History
        return run.epoch

    def train(self, max_steps, on_step) -> bool:
        """Train until done (True) or until ``max_steps`` steps were taken (False)."""
        if not any(callable(q) and not isinstance(q, Member) for q in self.queue):  # else names come later
            check_callback_names(self.callbacks_spec, [*self.pack.members, *(q.name for q in self.queue)])
        taken = 0
        for batch, takes, epoch_ends in (self._array_steps() if self.arrays else self._stream_steps()):
            logs = self._step(batch, takes)
            if on_step is not None:
                on_step(self.pack, _Plan(takes, tuple(epoch_ends), tuple(self._finishing(epoch_ends))))
            self._after_step(logs, takes, epoch_ends)
            taken += 1
            if max_steps is not None and taken >= max_steps:
                return False
        return True

    def _array_steps(self):
        while (plan := self.planner.next_step()) is not None:
            takes = {n: (t.offset, t.count) for n, t in plan.takes.items()}
            yield self.data.take(plan.indices), takes, list(plan.epoch_ends)

    def _stream_steps(self):
        while active := [n for n, r in self.runs.items() if not r.done and r.epoch < r.epochs]:
            batches = 0
            for batch in self.data.epoch():
                rows = int(np.shape(tf.nest.flatten(batch[0])[0])[0])
                active = [n for n in active if n in self.runs and not self.runs[n].done]
                yield batch, {n: (0, rows) for n in active}, []
                batches += 1
            if batches == 0:
                raise ValueError(f"the dataset yielded no batch for epoch {self.runs[active[0]].epoch + 1}. "
                                 "Repeat it, or pass steps_per_epoch with an endless dataset.")
            for n in active:
                if n in self.runs and not self.runs[n].done:
                    self._end_epoch(n)

    def _finishing(self, epoch_ends):
        return [n for n in epoch_ends if self.runs[n].epoch + 1 >= self.runs[n].epochs]

    def _step(self, batch, takes):
        for name in takes:
            self.runs[name].begin_batch()
        return self.pack._step(batch, takes)

    def _after_step(self, logs, takes, epoch_ends) -> None:
        for name, (_, rows) in takes.items():
            if name in self.runs:
                self.runs[name].end_batch(logs[name], rows)
        if self.bar is not None:
            losses = [self.runs[n].logs.get("loss") for n in takes if n in self.runs]
            self.bar.add(1, [("members", len(takes)), ("mean loss", float(np.nanmean(losses)) if losses else 0.0)])
        for name in list(takes):
            run = self.runs.get(name)
            if run is None or run.done:
                continue
            if name in epoch_ends:
                self._end_epoch(name)
            elif run.stopped is not None:  # stopped mid-epoch: Keras still ends the epoch
                self._end_epoch(name)

    def _end_epoch(self, name) -> None:
        run = self.runs[name]
        logs = run.end_epoch()
        if self.verbose:
            shown = " - ".join(f"{k}: {v:.4g}" for k, v in logs.items() if np.ndim(v) == 0)
            print(f"{name}: epoch {run.epoch}/{run.epochs} - {shown}")
        if run.epoch >= run.epochs or run.stopped is not None:
            self._end(name)

    def _end(self, name) -> None:
        run = self.runs[name]
        if run.stopped == "diverged":
            self.pack.diverged_[name] = run.epoch
        if self.arrays and name in self.planner.members:
            self.planner.remove(name)
        run.end()
        self.pack.members[name].start_epoch = run.epoch
        self.histories_[name] = run.history
        if self.queue:
            self.pack.checkpoints_[name] = self.pack.free(name)
            self.pack.add(self._next_queued())
        else:
            del self.runs[name]

    def _next_queued(self):
        item = self.queue.pop(0)
        return item() if callable(item) and not isinstance(item, Member) else item

    def histories(self) -> dict:
        out = dict(self.histories_)
        out.update({n: r.history for n, r in self.runs.items() if getattr(r.model, "history", None) is not None})
        return out


@dataclass(frozen=True)
class _Plan:
    """What ``on_step`` sees of a step: the members that trained and whose epoch or budget ended."""

    takes: dict
    epoch_ends: tuple
    finished: tuple


def _input_signature(model):
    """``[(shape without batch, dtype)]`` of the model's inputs, or None when the model does not say."""
    try:
        inputs = model.inputs
    except (AttributeError, ValueError):
        return None
    if not inputs:
        return None
    return [(tuple(t.shape[1:]), str(t.dtype)) for t in tf.nest.flatten(inputs)]


def _check_same_inputs(member, others) -> None:
    """Packed members read one input stream: refuse a member whose inputs differ from the pack's."""
    mine = _input_signature(member.model)
    for other in others:
        theirs = _input_signature(other.model)
        if mine is not None and theirs is not None and mine != theirs:
            raise ValueError(f"member {member.name!r} takes inputs {mine} but {other.name!r} takes {theirs}. "
                             "A pack shares one input stream: pack models with the same inputs, and train the "
                             "others in a pack of their own.")


def pack(models, *, batch_sizes=None, epochs=1, names=None, preprocess=None, device=None) -> PackedModel:
    """Pack compiled Keras models into one :class:`PackedModel`.

    Parameters
    ----------
    models : list of keras.Model
        Built and compiled models with the same inputs; each keeps its own
        optimizer, loss and metrics.
    batch_sizes : int or list of int, optional
        Batch size of every member over array data, or one for all (default:
        Keras's 32). Leave it None for datasets, which bring their own batches.
    epochs : int or list of int, default=1
        Epochs each member trains for in :meth:`PackedModel.fit`.
    names : list of str, optional
        Unique member names. Default: the models' names.
    preprocess, device
        See :class:`PackedModel`.

    Returns
    -------
    PackedModel

    Examples
    --------
    >>> import keras, numpy as np
    >>> def mlp(lr):
    ...     m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="softmax")])
    ...     m.compile(keras.optimizers.SGD(lr), "sparse_categorical_crossentropy", metrics=["accuracy"])
    ...     return m
    >>> packed = pack([mlp(0.1), mlp(0.01)], batch_sizes=[8, 4], names=["a", "b"])
    >>> x, y = np.ones((16, 4), "float32"), np.zeros(16, "int32")
    >>> histories = packed.fit(x, y, verbose=0)
    >>> {name: len(losses) for name, losses in packed.losses_.items()}
    {'a': 2, 'b': 4}
    >>> sorted(histories["a"].history)
    ['accuracy', 'loss']
    """
    models = list(models)
    if not models:
        raise ValueError("pack() needs at least one model. Got an empty list.")
    sizes = batch_sizes if isinstance(batch_sizes, (list, tuple)) else [batch_sizes] * len(models)
    budgets = epochs if isinstance(epochs, (list, tuple)) else [epochs] * len(models)
    names = list(names) if names is not None else [m.name for m in models]
    for label, values in (("batch_sizes", sizes), ("epochs", budgets), ("names", names)):
        if len(values) != len(models):
            raise ValueError(f"{label} has {len(values)} entries for {len(models)} models. "
                             "Pass one per model, or a single value for all.")
    members = [Member(n, m, None if b is None else int(b), int(e)) for n, m, b, e in zip(names, models, sizes, budgets)]
    return PackedModel(members, preprocess=preprocess, device=device)
