"""One member's part of a packed ``fit``: what ``model.fit`` does around each step, for that model.

``model.fit`` resets the metrics and calls the callbacks at every epoch and
batch, evaluates on the validation data at each epoch end, keeps a ``History``
and stops when a callback sets ``model.stop_training``. A pack trains its
members in lock step but they start, end epochs and stop at different steps, so
each member keeps this bookkeeping for itself; :class:`MemberRun` is that.
"""

from __future__ import annotations

import copy
import logging
import math

import keras
import numpy as np

from .evaluation import evaluate

__all__ = ["MemberRun", "check_callback_names", "member_callbacks"]

log = logging.getLogger(__name__)


def member_callbacks(callbacks, name: str) -> list:
    """Member ``name``'s own callbacks: its entry of a dict by name, or copies of a shared list."""
    if callbacks is None:
        return []
    if isinstance(callbacks, dict):
        return list(callbacks.get(name, []))
    callbacks = list(callbacks)
    for cb in callbacks:
        if isinstance(cb, keras.callbacks.ModelCheckpoint):
            raise ValueError("a ModelCheckpoint in a list of callbacks would be shared by every member and "
                             "overwrite one file. Give each member its own: callbacks={name: [ModelCheckpoint("
                             "...)], ...}.")
    return [copy.deepcopy(cb) for cb in callbacks]


def check_callback_names(callbacks, names) -> None:
    """A dict of callbacks must name members that exist (a typo would silently drop callbacks)."""
    if isinstance(callbacks, dict):
        unknown = sorted(set(callbacks) - set(names))
        if unknown:
            raise ValueError(f"callbacks name members {unknown} that are not in the pack ({sorted(names)}).")


def _python(logs: dict) -> dict:
    return {k: (float(v) if np.ndim(v) == 0 else np.asarray(v)) for k, v in logs.items()}


class MemberRun:
    """Callbacks, epoch and metric bookkeeping of one member during a packed ``fit``.

    Parameters
    ----------
    member : Member
    callbacks : list of keras.callbacks.Callback
    epochs : int
        The epoch index training ends at (``start_epoch + epochs``), as ``model.fit``'s ``epochs``.
    steps_per_epoch : int or None
    validation : tuple, optional
        ``(x, y)`` or ``(x, y, sample_weight)``, or a dataset, evaluated at each epoch end.
    validation_batch_size : int, optional
        Default: the member's batch size.

    Attributes
    ----------
    epoch : int
        The epoch being trained (absolute, counting the epochs before a resume).
    stopped : str or None
        Why the member stopped before its last epoch ("callback", "diverged"), else None.
    """

    def __init__(self, member, callbacks, *, epochs, steps_per_epoch, validation=None, validation_batch_size=None):
        self.member = member
        self.model = member.model
        self.callbacks = keras.callbacks.CallbackList(callbacks, add_history=True, add_progbar=False,
                                                      model=member.model, verbose=0, epochs=epochs,
                                                      steps=steps_per_epoch)
        self.epochs = epochs
        self.validation = validation
        self.validation_batch_size = validation_batch_size
        self.epoch = member.start_epoch
        self.step = 0  # batches taken in the current epoch
        self.logs: dict = {}
        self.epoch_logs: dict = {}
        self.stopped = None
        self.done = False
        self._rows = 0
        self._mean_loss = 0.0

    def begin(self) -> None:
        self.model.stop_training = False
        self.callbacks.on_train_begin()

    def begin_batch(self) -> None:
        if self.step == 0:
            self.model.reset_metrics()
            self._rows, self._mean_loss = 0, 0.0
            self.callbacks.on_epoch_begin(self.epoch)
        self.callbacks.on_train_batch_begin(self.step)

    def end_batch(self, logs: dict, rows: int) -> None:
        """Record a step's logs; the batch loss is recovered from Keras's running mean over rows."""
        self.logs = _python(logs)
        if "loss" in self.logs:
            total = self._mean_loss * self._rows
            self._rows += rows
            self._mean_loss = self.logs["loss"]
            self.member.losses.append((self._mean_loss * self._rows - total) / rows)
            if not math.isfinite(self.logs["loss"]):
                self.stopped = "diverged"
                log.warning("member %s diverged (loss %s at epoch %d, batch %d); it is stopped, the others go on",
                            self.member.name, self.logs["loss"], self.epoch, self.step)
        self.callbacks.on_train_batch_end(self.step, self.logs)
        self.step += 1
        if self.model.stop_training and self.stopped is None:
            self.stopped = "callback"

    def end_epoch(self) -> dict:
        """Validate, run the epoch-end callbacks and return the epoch's logs (as ``History`` keeps them)."""
        logs = dict(self.logs)
        if self.validation is not None:
            logs.update({f"val_{k}": v for k, v in self._validate().items()})
        self.callbacks.on_epoch_end(self.epoch, logs)
        self.epoch_logs = logs
        self.epoch += 1
        self.step = 0
        if self.model.stop_training and self.stopped is None:
            self.stopped = "callback"
        return logs

    def end(self) -> None:
        if not self.done:
            self.done = True
            self.callbacks.on_train_end(self.epoch_logs)

    @property
    def history(self):
        return self.model.history

    def _validate(self) -> dict:
        v = self.validation
        batch_size = self.validation_batch_size or self.member.batch_size
        if isinstance(v, tuple):
            x, y, w = (*v, None)[:3]
            return _python(evaluate(self.model, x, y, sample_weight=w, batch_size=batch_size))
        return _python(self.model.evaluate(v, verbose=0, return_dict=True))
