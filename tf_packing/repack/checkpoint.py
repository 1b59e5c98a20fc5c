"""The ``load`` and ``free`` primitives: move a member's weights and optimizer state in and out.

Repack (thesis L305-L333) moves models in and out of a device with two
primitives: ``load(model, device)`` and ``ckpt = free(model, device)``. The
optimizer state (Adam's moments, the iteration counter, the learning rate) is
part of the model state and travels with it (L319), so training that resumes
from a checkpoint continues exactly where it stopped.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import zipfile
from dataclasses import dataclass, field

import numpy as np

from spark_plugin.ownership import FileKind

__all__ = ["CHECKPOINT", "MemberCheckpoint", "free", "load", "read", "save"]

log = logging.getLogger(__name__)


@dataclass
class MemberCheckpoint:
    """A host copy of one member: weights, optimizer variables and training progress.

    Attributes
    ----------
    weights : list of numpy.ndarray
        ``model.get_weights()``.
    optimizer_variables : list of numpy.ndarray
        The values of ``model.optimizer.variables`` (iteration counter, learning
        rate and slots), in the optimizer's own order.
    epochs_done : int
        Epochs the member has completed.
    losses : list of float
        The member's per-step training losses so far.
    random_states : list of numpy.ndarray
        The model's variables that are neither weights nor the optimizer's: the states of its random
        generators (Dropout's draws). With them a member resumed mid-training draws the masks it would have
        drawn had it never stopped.
    """

    weights: list
    optimizer_variables: list
    epochs_done: int = 0
    losses: list = field(default_factory=list)
    random_states: list = field(default_factory=list)

    @property
    def nbytes(self) -> int:
        """Host bytes held by the checkpoint."""
        return sum(a.nbytes for a in self.weights) + sum(a.nbytes for a in self.optimizer_variables)


def _device_scope(device):
    import tensorflow as tf

    return tf.device(device) if device else contextlib.nullcontext()


def _optimizer(model):
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None:
        raise ValueError(f"model {model.name!r} has no optimizer. Call model.compile(optimizer=..., loss=...) "
                         "before packing, loading or freeing it.")
    return optimizer


def _random_states(model) -> list:
    """The model's variables that are not weights: its layers' random generator states."""
    weights = {id(w) for w in model.weights}
    return [v for v in model.variables if id(v) not in weights]


def build_optimizer(model, device=None) -> None:
    """Create the optimizer's slot variables for ``model`` (on ``device``) if they do not exist yet."""
    optimizer = _optimizer(model)
    if not optimizer.built:
        with _device_scope(device):
            optimizer.build(model.trainable_variables)


def load(model, device: str | None = None, checkpoint: MemberCheckpoint | None = None):
    """Place ``model`` and its optimizer state on ``device``, restoring ``checkpoint`` if given.

    Parameters
    ----------
    model : keras.Model
        A built, compiled model.
    device : str, optional
        A TensorFlow device name such as ``"/GPU:0"``. Optimizer slots are
        created there; build the model itself under ``tf.device(device)`` to
        place its weights. Default: TensorFlow's placement.
    checkpoint : MemberCheckpoint, optional
        State returned by :func:`free`.

    Returns
    -------
    keras.Model
        ``model``, ready to train.

    Raises
    ------
    ValueError
        When the model is not compiled, or the checkpoint does not match it.
    """
    build_optimizer(model, device)
    if checkpoint is None:
        return model
    optimizer = _optimizer(model)
    if len(checkpoint.weights) != len(model.weights):
        raise ValueError(f"checkpoint has {len(checkpoint.weights)} weight arrays but model {model.name!r} has "
                         f"{len(model.weights)}. Load a checkpoint freed from a model of the same architecture.")
    if len(checkpoint.optimizer_variables) != len(optimizer.variables):
        raise ValueError(f"checkpoint has {len(checkpoint.optimizer_variables)} optimizer variables but the "
                         f"optimizer of {model.name!r} has {len(optimizer.variables)}. Compile the model with "
                         "the same optimizer class as the one that was freed.")
    states = _random_states(model)
    if checkpoint.random_states and len(checkpoint.random_states) != len(states):
        raise ValueError(f"checkpoint has {len(checkpoint.random_states)} random generator states but model "
                         f"{model.name!r} has {len(states)}. Load a checkpoint freed from a model of the same "
                         "architecture.")
    with _device_scope(device):
        model.set_weights(checkpoint.weights)
        for variable, value in zip(states, checkpoint.random_states):  # none in a checkpoint from before they were kept
            variable.assign(value)
        for variable, value in zip(optimizer.variables, checkpoint.optimizer_variables):
            variable.assign(value)
    log.debug("loaded %s (%d bytes) onto %s", model.name, checkpoint.nbytes, device or "default device")
    return model


def free(model, device: str | None = None, *, epochs_done: int = 0, losses=()) -> MemberCheckpoint:
    """Copy ``model``'s weights and optimizer state to the host and return them as a checkpoint.

    Parameters
    ----------
    model : keras.Model
        A compiled model whose optimizer has been built (by :func:`load` or training).
    device : str, optional
        The device the model was loaded on; recorded in the log only.
    epochs_done : int, default=0
        Progress to record in the checkpoint.
    losses : sequence of float, default=()
        Per-step losses to record in the checkpoint.

    Returns
    -------
    MemberCheckpoint
    """
    build_optimizer(model, device)
    optimizer = _optimizer(model)
    ckpt = MemberCheckpoint([np.array(w) for w in model.get_weights()],
                            [np.array(v.numpy()) for v in optimizer.variables], epochs_done, list(losses),
                            [np.array(v.numpy()) for v in _random_states(model)])
    log.debug("freed %s (%d bytes) from %s", model.name, ckpt.nbytes, device or "default device")
    return ckpt


def _is_checkpoint(path) -> bool:
    """Whether ``path`` is a checkpoint :func:`save` wrote (an ``.npz`` whose ``meta`` says how it was saved)."""
    try:
        with np.load(path) as npz:
            return "epochs_done" in json.loads(str(npz["meta"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, zipfile.BadZipFile):  # not an npz of ours
        return False


#: A member's checkpoint file: :func:`save` replaces only one of these.
CHECKPOINT = FileKind("tf_packing checkpoint", _is_checkpoint, ".npz")


def save(checkpoint: MemberCheckpoint, path) -> None:
    """Write ``checkpoint`` to ``path`` (``.npz``), atomically: a crash leaves the old file or the new one.

    The temporary file is this process's own, so two processes writing the same checkpoint (a retried or
    speculative Spark task beside the attempt it replaces) each replace the file whole. A file at ``path``
    that is not a :data:`CHECKPOINT` is refused (:class:`~spark_plugin.errors.NotOursError`), not replaced.
    """
    path = os.fspath(CHECKPOINT.check_writable(path))
    arrays = {f"w{i}": w for i, w in enumerate(checkpoint.weights)}
    arrays.update({f"o{i}": v for i, v in enumerate(checkpoint.optimizer_variables)})
    arrays.update({f"r{i}": v for i, v in enumerate(checkpoint.random_states)})
    meta = {"weights": len(checkpoint.weights), "optimizer_variables": len(checkpoint.optimizer_variables),
            "random_states": len(checkpoint.random_states),
            "epochs_done": checkpoint.epochs_done, "losses": [float(v) for v in checkpoint.losses]}
    tmp = f"{path}.{os.getpid()}.tmp.npz"
    np.savez(tmp, meta=np.array(json.dumps(meta)), **arrays)
    os.replace(tmp, path)


def read(path) -> MemberCheckpoint:
    """The checkpoint :func:`save` wrote to ``path``."""
    with np.load(path) as npz:
        meta = json.loads(str(npz["meta"]))
        return MemberCheckpoint([npz[f"w{i}"] for i in range(meta["weights"])],
                                [npz[f"o{i}"] for i in range(meta["optimizer_variables"])], meta["epochs_done"],
                                meta["losses"], [npz[f"r{i}"] for i in range(meta.get("random_states", 0))])
