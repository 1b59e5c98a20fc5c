"""The packed unit: several compiled Keras models trained by one fused step on one input stream.

``pack([model_a, model_b])`` returns a :class:`PackedModel`. Each step reads one
shared batch (gathered once, preprocessed once), gives every member its slice
(:mod:`tf_packing.batching`), and runs one ``tf.function`` that computes every
member's loss, differentiates ``sum(loss_i)`` once and lets each member's own
optimizer apply its own gradients. Since ``d loss_j / d theta_i = 0`` for
``i != j``, every member gets exactly the gradients it would get alone: the
isolation guarantee of Repack (thesis L303).

Members that finish their epochs are freed (checkpointed) during ``fit``, and
queued models are loaded into the running pack in their place (thesis L375-L379).
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field

import numpy as np
import tensorflow as tf

from . import fused as _fused
from .batching import BatchPlanner, padded_size
from .checkpoint import MemberCheckpoint, free, load
from .step import build_step, per_example_loss

__all__ = ["Member", "PackedModel", "pack"]

log = logging.getLogger(__name__)


@dataclass
class Member:
    """One model in a pack, with its batch size, epoch budget and progress.

    Attributes
    ----------
    losses : list of float
        Training loss of every step the member took, in order.
    """

    name: str
    model: object
    batch_size: int
    epochs: int = 1
    start_epoch: int = 0
    losses: list = field(default_factory=list)

    def __post_init__(self):
        if getattr(self.model, "optimizer", None) is None or getattr(self.model, "loss", None) is None:
            raise ValueError(f"model {self.name!r} is not compiled. Call model.compile(optimizer=..., loss=...) "
                             "first: every member keeps its own optimizer, learning rate and loss.")
        if not self.model.built:
            raise ValueError(f"model {self.name!r} is not built. Give it a keras.Input or call it once on data.")
        self.loss_fn = per_example_loss(self.model.loss)


class PackedModel:
    """Several Keras models trained together, in lock step, from one shared input stream.

    Parameters
    ----------
    members : list of Member
        The models to train.
    preprocess : callable, optional
        A function applied to each shared batch inside the step, once for the
        whole pack (decoding, scaling, augmentation).
    fuse : {"auto", "always", "never"}, default="auto"
        Fusion of members that share rows (:mod:`tf_packing.fused`): whole
        identical Dense stacks as batched products, or else a shared first
        Dense/Conv2D layer as one wide product or convolution. ``"auto"`` fuses
        only what was measured faster: on CPU a shared first Conv2D (the
        separate Dense products of a CPU pack already run in parallel), on a
        GPU also Dense layers. ``"always"`` fuses whatever it can and raises
        when nothing can be fused.
    device : str, optional
        TensorFlow device for the step and the members' optimizer state.

    Attributes
    ----------
    checkpoints_ : dict of str to MemberCheckpoint
        Members freed during :meth:`fit` (done with their epochs).
    preprocess_calls_ : int
        How many times ``preprocess`` ran (once per packed step).
    steps_ : int
        Packed steps taken.
    step_times_ : list of float
        Wall seconds of every packed step (excluding loads and frees).
    """

    def __init__(self, members, *, preprocess=None, fuse="auto", device=None):
        if fuse not in ("auto", "always", "never"):
            raise ValueError(f"fuse must be 'auto', 'always' or 'never'. Got {fuse!r}.")
        self.members = {}
        self.preprocess = preprocess
        self.fuse = fuse
        self.device = device
        self.checkpoints_ = {}
        self.steps_ = 0
        self.step_times_ = []
        self._calls = tf.Variable(0, dtype=tf.int64, trainable=False, name="preprocess_calls")
        self._steps = {}
        self._traced = ()  # member names of the step last run, ghosts included
        self._ghosts = {}  # freed members kept in the traced step, masked out, until it is rebuilt
        self._cost = {"step": 0.0, "trace": 0.0}  # last step time; tracing time per member (measured)
        self._planner = None
        for member in members:
            self.add(member)

    @property
    def preprocess_calls_(self) -> int:
        return int(self._calls.numpy())

    # -- membership -----------------------------------------------------------------------
    def add(self, member: Member, checkpoint: MemberCheckpoint | None = None) -> None:
        """Load ``member`` into the pack (during :meth:`fit` too: it joins at the next step)."""
        if member.name in self.members:
            raise ValueError(f"a member named {member.name!r} is already packed. Pass unique names.")
        load(member.model, self.device, checkpoint)
        if checkpoint is not None:
            member.start_epoch, member.losses = checkpoint.epochs_done, list(checkpoint.losses)
        self.members[member.name] = member
        if self._planner is not None:
            self._planner.add(member.name, member.batch_size, epochs=member.epochs, start_epoch=member.start_epoch)
        log.info("loaded member %s (batch %d, %d epochs) into a pack of %d",
                 member.name, member.batch_size, member.epochs, len(self.members))

    def load(self, model, *, batch_size: int, epochs: int = 1, name: str | None = None,
             checkpoint: MemberCheckpoint | None = None) -> Member:
        """Load ``model`` as a new member; resume it from ``checkpoint`` when given."""
        member = Member(name or model.name, model, batch_size, epochs)
        self.add(member, checkpoint)
        return member

    def free(self, name: str) -> MemberCheckpoint:
        """Remove member ``name`` and return its checkpoint (weights, optimizer state, progress)."""
        if name not in self.members:
            raise KeyError(f"no member named {name!r}; the pack holds {sorted(self.members)}.")
        member = self.members.pop(name)
        done = member.start_epoch
        if self._planner is not None and name in self._planner.members:
            done = self._planner.epoch_of(name)
            self._planner.remove(name)
        log.info("freed member %s after %d epochs", name, done)
        ckpt = free(member.model, self.device, epochs_done=done, losses=member.losses)
        if name in self._traced:
            self._ghosts[name] = (member, ckpt)
        return ckpt

    def _drop_ghosts(self) -> None:
        """Give freed members that stayed in the traced step back their freed state."""
        for member, ckpt in self._ghosts.values():
            load(member.model, self.device, ckpt)
        self._ghosts = {}

    # -- training -------------------------------------------------------------------------
    def fit(self, x, y, *, shuffle: bool = False, seed: int = 0, queue=(), record: bool = False,
            max_steps: int | None = None, on_step=None):
        """Train every member for its epochs; load queued members as others finish.

        Parameters
        ----------
        x, y : array-like
            Training inputs and targets, shared by every member.
        shuffle : bool, default=False
            Draw a new example order per epoch (the same one for every member).
        seed : int, default=0
            Seed of the epoch orders.
        queue : iterable of Member, default=()
            Members to hot-load, in order, each time a member finishes.
        record : bool, default=False
            Keep each member's index batches in ``planner_.history_``.
        max_steps : int, optional
            Stop after this many packed steps (members stay loaded).
        on_step : callable, optional
            Called as ``on_step(pack, plan)`` after every step, before members
            that finished are freed; it may ``evaluate``, ``add`` or ``free``
            members.

        Returns
        -------
        dict of str to list of float
            Every member's per-step losses, freed members included.
        """
        queue = list(queue)
        if self._planner is None:
            self._planner = BatchPlanner(len(x), shuffle=shuffle, seed=seed, record=record)
            self.planner_ = self._planner
            for member in self.members.values():
                self._planner.add(member.name, member.batch_size, epochs=member.epochs,
                                  start_epoch=member.start_epoch)
        with tf.device(self.device) if self.device else contextlib.nullcontext():
            xs, ys = tf.constant(x), tf.constant(y)
        self._specs = [tf.TensorSpec([None, *t.shape[1:]], t.dtype) for t in (xs, ys)]
        while queue and not self.members:
            self.add(queue.pop(0))
        taken = 0
        while max_steps is None or taken < max_steps:
            plan = self._planner.next_step()
            if plan is None:
                break
            self._run_step(xs, ys, plan)
            taken += 1
            if on_step is not None:
                on_step(self, plan)
            for name in plan.finished:
                if name in self.members:  # on_step may have freed it already
                    self.members[name].start_epoch += self.members[name].epochs
                    self.checkpoints_[name] = self.free(name)
                if queue:
                    self.add(queue.pop(0))
        if max_steps is None:
            self._planner = None
            self._drop_ghosts()
            self._traced = ()
        return self.history()

    def history(self) -> dict:
        """Per-step losses of every member, packed or freed."""
        out = {name: list(ckpt.losses) for name, ckpt in self.checkpoints_.items()}
        out.update({name: list(m.losses) for name, m in self.members.items()})
        return out

    def _step_members(self, live) -> dict:
        """Members of the next step: the live ones, plus ghosts while re-tracing would cost more.

        A member that finishes or is freed stays in the traced step as a *ghost*
        (no rows, zero loss, its updates discarded: its model gets its freed
        state back when the ghosts are dropped), so the pack is not re-traced
        each time a member leaves. Ghosts are dropped when a member joins, or
        when their compute over the steps left would cost more than tracing
        the live members again (both measured on this pack).
        """
        ghosts = {n: m for n, (m, _) in self._ghosts.items()}
        if set(live) <= set(self._traced) and set(self._traced) <= set(live) | set(ghosts):
            planned = set(self._planner.members)  # members finishing with this step have left the plan
            steps_left = max([self._planner.steps_left(n) for n in live if n in planned] + [0])
            waste = steps_left * self._cost["step"] * len(ghosts) / max(len(self._traced), 1)
            if waste <= self._cost["trace"] * len(live):
                return {n: self.members.get(n) or ghosts[n] for n in self._traced}
        self._drop_ghosts()
        return {n: self.members[n] for n in live}

    def _run_step(self, xs, ys, plan) -> None:
        step_members = self._step_members(tuple(sorted(plan.takes)))
        names = tuple(sorted(step_members))
        sizes = {n: step_members[n].batch_size for n in names}
        rows = padded_size(plan, sizes)
        idx = np.zeros(rows, dtype=np.int32)
        idx[:len(plan.indices)] = plan.indices
        no_rows = _Take0()
        offsets = np.array([plan.takes.get(n, no_rows).offset for n in names], dtype=np.int32)
        counts = np.array([plan.takes.get(n, no_rows).count for n in names], dtype=np.int32)
        shared = bool(len(set(sizes.values())) == 1 and not offsets.any())
        self._just_traced = False
        step = self._step_fn(step_members, names, rows, shared)
        new_trace = self._just_traced
        self._traced = names
        start = time.perf_counter()
        losses = step(xs, ys, tf.constant(idx), tf.constant(offsets), tf.constant(counts))
        losses = losses.numpy()
        elapsed = time.perf_counter() - start
        self.step_times_.append(elapsed)
        if new_trace:
            self._cost["trace"] = max(elapsed - self._cost["step"], 0.0) / len(names)
        else:
            self._cost["step"] = elapsed
        self.steps_ += 1
        for name, value in zip(names, losses):
            if name in plan.takes:
                self.members[name].losses.append(float(value))

    def _step_fn(self, step_members, names, rows, shared):
        members = [step_members[n] for n in names]
        models = [m.model for m in members]
        # "auto" fuses only where it was measured faster: on CPU a shared first Conv2D, on GPU also Dense
        gpu = self.fuse == "always" or _on_gpu(self.device)
        dense = shared and gpu and _fused.can_fuse(models)
        first = shared and not dense and self.fuse != "never" and _fused.can_fuse_first(models, conv_only=not gpu)
        use_fused = "dense" if dense else "first" if first else None
        if self.fuse == "always" and not use_fused:
            raise ValueError(f"fuse='always' but members {list(names)} cannot be fused: fusion needs the same "
                             "batch size for all and the same Dense stack or first Dense/Conv2D layer. "
                             "Use fuse='auto'.")
        key = (tuple(id(m.model) for m in members), names, use_fused, tuple(self._specs))
        if key not in self._steps:
            self._steps = {k: v for k, v in self._steps.items() if k[1] == names}  # drop stale traces
            stack = {"dense": _fused.FusedForward, "first": _fused.FirstLayerFused}[use_fused](models) \
                if use_fused else None
            self._steps[key] = build_step(members, self._specs, preprocess=self.preprocess, calls=self._calls,
                                          fused=stack)
            self._just_traced = True
            log.debug("traced packed step for %s (rows=%d, fused=%s)", names, rows, use_fused)
        return self._steps[key]

    # -- inference ------------------------------------------------------------------------
    def evaluate(self, x, y, *, batch_size: int = 1024, names=None) -> dict:
        """Loss and accuracy of packed members on ``(x, y)``, one shared pass over the data.

        Accuracy is the share of rows whose arg-max prediction equals the integer
        label (classification members); it is NaN for other targets. ``names``
        limits the evaluation to some members (default: all).
        """
        names = sorted(self.members) if names is None else sorted(names)
        totals = {n: [0.0, 0.0] for n in names}
        for start in range(0, len(x), batch_size):
            xb, yb = x[start:start + batch_size], y[start:start + batch_size]
            if self.preprocess is not None:
                xb = self.preprocess(tf.constant(xb))
            for n in names:
                m = self.members[n]
                pred = m.model(xb, training=False)
                totals[n][0] += float(tf.reduce_sum(m.loss_fn(yb, pred)))
                if pred.shape[-1] and pred.shape[-1] > 1 and np.ndim(yb) == 1:
                    totals[n][1] += float(np.sum(np.argmax(pred, axis=-1) == yb))
                else:
                    totals[n][1] = float("nan")
        return {n: {"loss": t[0] / len(x), "accuracy": t[1] / len(x)} for n, t in totals.items()}


class _Take0:
    """The slice of a ghost member: no rows."""

    offset = 0
    count = 0


def _on_gpu(device) -> bool:
    """Whether the step runs on a GPU: the device named, else TensorFlow's default placement."""
    if device:
        return "GPU" in device.upper()
    return bool(tf.config.list_logical_devices("GPU"))


def pack(models, *, batch_sizes=32, epochs=1, names=None, preprocess=None, fuse="auto", device=None) -> PackedModel:
    """Pack compiled Keras models into one :class:`PackedModel`.

    Parameters
    ----------
    models : list of keras.Model
        Built and compiled models; each keeps its own optimizer and loss.
    batch_sizes : int or list of int, default=32
        Batch size of every member, or one for all.
    epochs : int or list of int, default=1
        Epochs each member trains for in :meth:`PackedModel.fit`.
    names : list of str, optional
        Unique member names. Default: the models' names.
    preprocess, fuse, device
        See :class:`PackedModel`.

    Returns
    -------
    PackedModel

    Examples
    --------
    >>> import keras, numpy as np
    >>> def mlp(lr):
    ...     m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="softmax")])
    ...     m.compile(keras.optimizers.SGD(lr), "sparse_categorical_crossentropy")
    ...     return m
    >>> packed = pack([mlp(0.1), mlp(0.01)], batch_sizes=[8, 4], names=["a", "b"])
    >>> x, y = np.ones((16, 4), "float32"), np.zeros(16, "int32")
    >>> {name: len(losses) for name, losses in packed.fit(x, y).items()}
    {'a': 2, 'b': 4}
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
    members = [Member(n, m, int(b), int(e)) for n, m, b, e in zip(names, models, sizes, budgets)]
    return PackedModel(members, preprocess=preprocess, fuse=fuse, device=device)
