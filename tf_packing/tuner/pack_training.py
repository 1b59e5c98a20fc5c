"""One group of trials trained as one pack: the unit the tuner runs in its own process or in a Spark task.

:class:`PackTraining` holds everything about training a group except the data and
the trials' state: the user's ``build_fn``, the search space, seeds, batch sizes,
callbacks and how often trials are scored. It is plain, picklable data, so the
Spark runner (:mod:`tf_packing.tuner.spark_packs`) ships it to executors and they train
exactly as the tuner would in its own process: same models from the same seeds,
same data order, same scoring points.
"""

from __future__ import annotations

import copy
import gc
import logging
import math
from dataclasses import dataclass, field

import keras
import tensorflow as tf

from .hyperparameters import HyperParameters
from .model_pool import models_kept
from ..repack import Member, PackedModel, free
from .packing_policy import split_group
from .rung_progress import RungProgress
from .scorekeeper import Scorekeeper

__all__ = ["PackTraining"]

log = logging.getLogger(__name__)


class _Reporter(keras.callbacks.Callback):
    """Hands one trial's epoch-end logs to the scorekeeper, and stops the trial when it is killed."""

    def __init__(self, keeper, trial):
        super().__init__()
        self.keeper, self.trial = keeper, trial

    def on_epoch_end(self, epoch, logs=None):
        if self.keeper.record(self.trial, logs or {}):
            self.model.stop_training = True


class _EpochProgress(keras.callbacks.Callback):
    """Writes a member's checkpoint and this rung's scores at each of its epoch ends (see :mod:`.rung_progress`)."""

    def __init__(self, progress: RungProgress, keeper, trial, member):
        super().__init__()
        self.progress, self.keeper, self.trial, self.member = progress, keeper, trial, member
        self.curve_start, self.trace_start = len(keeper.curves[trial.trial_id]), len(keeper.trace)

    def on_epoch_end(self, epoch, logs=None):
        trial_id = self.trial.trial_id
        scores = self.keeper.curves[trial_id][self.curve_start:]
        rows = [row for row in self.keeper.trace[self.trace_start:] if row[1] == trial_id]  # one per score
        self.progress.write(trial_id, free(self.model, epochs_done=epoch + 1, losses=self.member.losses), scores,
                            rows, trial_id in self.keeper.killed)


class _BestEpoch(keras.callbacks.Callback):
    """Keeps a member's checkpoint at its best-scoring epoch of the rung (``keep_best_epoch``)."""

    def __init__(self, keeper, trial, member):
        super().__init__()
        self.keeper, self.trial, self.member = keeper, trial, member
        self.scored = len(keeper.curves[trial.trial_id])
        self.best_score, self.checkpoint = None, None

    def on_epoch_end(self, epoch, logs=None):
        curve = self.keeper.curves[self.trial.trial_id]
        if len(curve) == self.scored:  # this epoch end recorded no score
            return
        self.scored = len(curve)
        if math.isfinite(curve[-1]) and (self.best_score is None
                                         or self.keeper.objective.better(curve[-1], self.best_score)):
            self.best_score = curve[-1]
            self.checkpoint = free(self.model, epochs_done=epoch + 1, losses=self.member.losses)


@dataclass
class PackTraining:
    """How the tuner trains a group of trials: models, batch sizes, callbacks and scoring points.

    Parameters
    ----------
    build_fn : callable
        The user's ``build_fn(hp)``.
    space : HyperParameters
        The search space; a conditional branch first met while building joins it.
    seed : int
        Each trial's weights come from ``seed * 1_000_003 + trial_id``; data orders from ``seed``.
    objective_name : str
    batch_size_key : str
    fallback_batch_size : int
        The batch size of a trial whose configuration has no ``batch_size_key``.
    every_epoch : bool
        Score every epoch (early kill, a target or user callbacks) rather than at each member's end.
    callbacks : list
        The user's Keras callbacks, copied for every trial.
    progress : RungProgress, optional
        Where each member writes its state at every epoch end, so a stopped search resumes mid-rung.
    keep_best_epoch : bool
        Each trial leaves the rung with the weights and optimizer state of its best-scoring epoch in the rung
        (Keras Tuner's semantics), counted as having trained the whole rung.
    kept_models : int
        The most models alive at once in a process: a pack's, and those kept between packs so that a later
        trial of the same architecture reuses one and its traces (:mod:`.model_pool`). 0 keeps none.
    search_id : str
        Names the search, so a process that trained another search's packs lets those models go.
    """

    build_fn: object
    space: HyperParameters
    seed: int
    objective_name: str
    batch_size_key: str
    fallback_batch_size: int
    every_epoch: bool = False
    callbacks: list = field(default_factory=list)
    progress: RungProgress | None = None
    keep_best_epoch: bool = False
    kept_models: int = 0
    search_id: str = ""

    def build(self, trial) -> keras.Model:
        """``trial``'s compiled model, with weights drawn from its own seed."""
        keras.utils.set_random_seed(self.seed * 1_000_003 + trial.trial_id)
        hp = self.space.copy(trial.config)
        model = self.build_fn(hp)
        if not isinstance(model, keras.Model) or not model.built:
            raise ValueError(f"build_fn returned {type(model).__name__}, not a built keras.Model, for "
                             f"{trial.config}. Start the model with keras.Input and return it.")
        new = self.space.merge(hp)  # a branch the discovery call did not take
        if new:
            log.info("hyper-parameters %s joined the search space (first met by trial %d)", new, trial.trial_id)
        trial.config.update({k: v for k, v in hp.values.items() if k not in trial.config})
        return model

    def batch_size(self, trial) -> int:
        return int(trial.config.get(self.batch_size_key, self.fallback_batch_size))

    def train(self, trials, epochs, checkpoints: dict, data, validation, keeper: Scorekeeper, *,
              device=None) -> tuple[dict, int]:
        """Train ``trials`` to ``epochs`` as one pack; on running out of memory, split it and retry each half.

        Returns the trials' new checkpoints by trial id and how many times a group was split.
        Raises :class:`~tf_packing.tuner.scorekeeper.TargetReached` when a trial reaches the target.
        """
        try:
            return self._fit(trials, epochs, checkpoints, data, validation, keeper, device), 0
        except tf.errors.ResourceExhaustedError as e:
            models_kept(self.kept_models, self.search_id).clear()  # what they hold is the first memory to give back
            halves = split_group(list(range(len(trials))))  # raises for a single trial
            log.warning("pack of %d trials ran out of memory (%s); splitting it into %s and retrying from "
                        "the rung's checkpoints", len(trials), str(e).splitlines()[0][:120],
                        [len(h) for h in halves])
            for trial in trials:
                keeper.forget(trial)
            trained, splits = {}, 1
            for half in halves:
                more, more_splits = self.train([trials[i] for i in half], epochs, checkpoints, data, validation,
                                               keeper, device=device)
                trained.update(more)
                splits += more_splits
            return trained, splits

    def _fit(self, trials, epochs, checkpoints, data, validation, keeper, device) -> dict:
        """Build the group's models, train them as one pack, return their checkpoints, drop the models."""
        x, y = data
        val = validation
        pool = models_kept(self.kept_models, self.search_id)
        reused = pool.reused_
        pack = PackedModel([], device=device, pool=pool)
        by_name, callbacks, best, models = {}, {}, {}, []
        try:
            for trial in trials:
                pool.make_room(len(models))
                name = f"t{trial.trial_id}"
                by_name[name] = trial
                keeper.curves.setdefault(trial.trial_id, [])
                checkpoint = checkpoints.get(trial.trial_id)  # mid-rung when the search resumes there
                done = checkpoint.epochs_done if checkpoint is not None else trial.epochs_done
                models.append(pool.acquire(self.build(trial), device))
                member = Member(name, models[-1], self.batch_size(trial), epochs - done)
                pack.add(member, checkpoint)
                callbacks[name] = [*_copies(self.callbacks), _Reporter(keeper, trial)]
                if self.progress is not None:
                    callbacks[name].append(_EpochProgress(self.progress, keeper, trial, member))
                if self.keep_best_epoch:
                    best[name] = _BestEpoch(keeper, trial, member)
                    callbacks[name].append(best[name])
            if pool.reused_ > reused and tf.config.list_logical_devices("GPU"):
                gc.collect()  # the fresh models whose state went to kept ones: their device memory, before training
            trained = self._train_pack(pack, by_name, callbacks, x, y, val, keeper)
        finally:
            for model in models:
                pool.release(model)
        for name, kept in best.items():
            if kept.checkpoint is not None:  # its best epoch, as though it had trained to where it stopped
                kept.checkpoint.epochs_done = trained[by_name[name].trial_id].epochs_done
                trained[by_name[name].trial_id] = kept.checkpoint
        del pack, models
        gc.collect()  # the group's models not kept go before the next group's are built
        return trained

    def _train_pack(self, pack, by_name, callbacks, x, y, val, keeper) -> dict:
        """Train the loaded pack through the rung; return each trial's checkpoint, freeing the members."""

        def score(packed, names):
            for name, logs in packed.evaluate(*val[:2], names=names).items():
                keeper.record(by_name[name], {f"val_{k}": v for k, v in logs.items()})

        if self.every_epoch:
            pack.fit(x, y, validation_data=val, callbacks=callbacks, shuffle=True, seed=self.seed, verbose=0)
        else:  # scored once, as each member finishes the rung
            scored_on_validation = val is not None and self.objective_name.startswith("val_")
            pack.fit(x, y, callbacks=callbacks, shuffle=True, seed=self.seed, verbose=0,
                     on_step=(lambda packed, plan: score(packed, plan.finished)) if scored_on_validation else None)
            unscored = [n for n in pack.members if by_name[n].trial_id not in keeper.scores]
            if unscored and scored_on_validation:  # stopped mid-epoch (diverged, or a callback stopped it)
                score(pack, unscored)
        return {by_name[name].trial_id: pack.free(name) for name in list(pack.members)}


def _copies(callbacks) -> list:
    """Each trial's own copies of the user's callbacks (Keras Tuner copies them per trial too)."""
    try:
        return [copy.deepcopy(cb) for cb in callbacks]
    except (TypeError, ValueError) as e:
        raise ValueError(f"the search callbacks cannot be copied for each trial ({e}). Pass callbacks that hold "
                         "no open files or live models.") from e
