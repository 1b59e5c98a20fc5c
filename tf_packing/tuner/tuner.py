"""Pack-aware Hyperband for Keras, with Keras Tuner's API: the adapter that trains each rung as packs.

A Keras Tuner user switches by changing the import: ``Tuner(build_fn, objective=
"val_accuracy", max_epochs=27)`` takes the same ``build_fn(hp)`` (``hp.Choice``,
``hp.Int``, ``hp.Float``, ``hp.Boolean``, ``hp.Fixed``), ``search(x, y,
validation_data=..., callbacks=...)`` trains, and ``results_summary()``,
``get_best_hyperparameters()`` and ``get_best_models()`` read the outcome. A
``directory`` makes the search resumable, as in Keras Tuner.

Underneath, :class:`Tuner` asks :class:`~tf_packing.tuner.hyperband.HyperbandOracle`
for the next rung, splits its trials into memory-feasible groups with
:func:`~tf_packing.tuner.packing_policy.pack_opt`, trains every group as one
:class:`~tf_packing.repack.packed.PackedModel` from the trials' checkpoints, and reports
each member's score back. The oracle decides; this module only translates.

A pack's models are built only when that pack runs and dropped when it ends
(their state lives on as host checkpoints), so ``memory_capacity`` bounds the
models alive at once. When a group runs out of device memory
(``tf.errors.ResourceExhaustedError``) it is split in two and each half is
retried from the rung's checkpoints.

Early termination (``early_kill``): a :class:`~tf_packing.tuner.early_kill.KillRule`
(fixed threshold) or :class:`~tf_packing.tuner.hyperdrive.HyperDrive` (predicted
curve); a killed trial leaves its pack at once and is never promoted. With
HyperDrive, each rung trains the packs holding promising trials first.
"""

from __future__ import annotations

import gc
import logging
import math
import time
import uuid

import keras
import numpy as np
from tqdm.auto import tqdm

from spark_plugin.arguments import number, whole_number
from spark_plugin.errors import UsageError

from ..repack import MAX_PACK, batch_size_of, model_bytes
from .early_kill import KillRule
from .hyperband import HyperbandOracle, bracket_rungs, check_budget, max_bracket
from .hyperdrive import HyperDrive
from .hyperparameters import HyperParameters
from .model_pool import models_kept
from .objective import objective_of
from .pack_training import PackTraining
from .packing_policy import STRATEGIES, pack_opt
from .project import Project, build_fn_identity, project_folder
from .rung_progress import RungProgress
from .scorekeeper import Scorekeeper, TargetReached

__all__ = ["Tuner"]

log = logging.getLogger(__name__)


class Tuner:
    """Hyperband over a Keras Tuner search space, each rung's trials trained in packs.

    Parameters
    ----------
    hypermodel : callable or object with ``build(hp)``
        ``build_fn(hp) -> keras.Model``: a built, compiled model whose
        hyper-parameters come from ``hp.Choice/Int/Float/Boolean/Fixed``
        (Keras Tuner's API), compiled with the metric the objective names.
        A ``keras_tuner.HyperModel`` works too (its ``build``; a custom ``fit``
        is not called: packs train the models together).
    search_space : dict of str to list, optional
        The older form: values of each hyper-parameter; ``build_fn`` then reads
        them as ``hp["name"]``. Default: the space ``build_fn`` registers.
    objective : str or Objective, default="val_accuracy"
        A log name (direction inferred for losses, errors and accuracies) or
        ``Objective(name, "max"|"min")``; ``keras_tuner.Objective`` works too.
    max_epochs : int, default=81
        Hyperband's R. One iteration costs about ``R * (log_eta R + 1)^2`` epochs.
    factor : int, default=3
        Hyperband's eta.
    oracle : HyperbandOracle, optional
        The oracle to ask, as Keras Tuner users pass one (``Tuner(build_fn, oracle=HyperbandOracle(
        max_epochs=27, factor=3, mode="max", seed=1))``): made without a search space, it is given the one
        ``build_fn`` registers. Its ``max_epochs``, ``factor``, ``seed`` and ``mode`` are the search's: the
        Tuner's own are then left at their defaults (a different value is refused), and ``mode`` must be
        the objective's direction. Default: one made from this Tuner's arguments.
    hyperparameters : HyperParameters, optional
        Hyper-parameters declared ahead (e.g. ``hp.Fixed`` overrides), merged
        with those ``build_fn`` registers; as in Keras Tuner.
    directory, project_name : str, optional
        Where the search keeps its state: a later ``search`` with the same
        folder resumes each trial from the last epoch it finished (inside the
        rung under way too). Default: in memory only.
        A folder holding another search is refused with ``ValueError``: one
        written under another ``max_epochs``, ``factor``, objective or seed,
        by another ``build_fn`` (module and qualified name, and its source when
        :func:`inspect.getsource` reads it) or over another search space (the
        space as ``build_fn`` declares it). A folder written before the last
        two were recorded is resumed with a warning. The folder is sparkrm's
        (:mod:`spark_plugin.ownership`): one holding files it did not write, or
        written by a tf_packing that did not mark its folders, is refused
        (``NotOursError``) and left as it is.
    overwrite : bool, default=False
        Start afresh even when ``directory/project_name`` holds a search (of sparkrm's only).
    packing : {"knn", "random", "batch_size", "none"}, default="knn"
        How each rung is split into packs; ``"none"`` is plain Hyperband.
    early_kill : KillRule or HyperDrive, optional
        Kill hopeless trials inside a rung (scored every epoch). Default: off.
    target : float, optional
        Stop the search as soon as a trial's objective reaches this (time to
        target, as in HyperDrive's experiments).
    memory_capacity : float, optional
        Device bytes a pack's estimate may use; default unlimited.
    distance_threshold : float, optional
        kNN packing's largest index distance to the centroid; default unlimited.
    group_size : int, default=4
        Random packing's group size (1 to 64).
    max_group : int, default=8
        Most members per pack (bounds the size of the traced step; 1 to 64).
    reuse_models : bool or int, default=True
        Keep built models between packs and train a later trial of the same
        architecture on one of them, loaded with the state the trial's own model
        has, so its traced steps are reused (:mod:`tf_packing.tuner.model_pool`).
        Results are the same either way. True keeps up to ``4 * max_group``
        models alive in each process (a pack's included), an int that many.
        Off under a ``memory_capacity``, whose estimates count a pack's models
        only; a pack that runs out of memory lets every kept model go first.
    batch_size_key : str, default="batch_size"
        Hyper-parameter holding the batch size; else ``search(batch_size=)``,
        else ``default_batch_size``.
    default_batch_size : int, default=32
    seed : int, default=0
        Seed of sampling, packing, data order and each trial's initial weights.
    progress : bool, default=True
        Show a tqdm bar over trial-epochs.
    keep_best_epoch : bool, default=False
        Keras Tuner's scoring: every epoch is scored, a trial ranks by its best epoch in each rung, and leaves
        the rung with that epoch's weights and optimizer state (so a promoted trial continues from them, and
        ``get_best_models`` returns them). Default: the score at each rung's end, the state it ended in.
        With a search resumed mid-rung, the best epoch is taken over the epochs trained since the resume.
    spark : SparkSession or SparkContext, optional
        Train each rung's packs as Spark tasks on the cluster's executors, one pack per task slot
        (``spark.task.cpus`` cores, and ``spark.task.resource.gpu.amount`` GPUs where executors
        discover them), instead of in this process. Needs ``directory`` on storage every executor
        reads: the data (NumPy arrays) is written there once and each trial's checkpoints after each
        rung, so a task lost with its executor is retried from them. Each rung is split into at
        least as many packs as there are slots (up to ``max_group`` members each). Results equal
        those of the same search in this process.

    Attributes
    ----------
    oracle_ : HyperbandOracle
    best_config_ : dict
    best_score_ : float
    groups_ : list of dict
        For every rung: bracket, rung, epochs and the sizes of its packs.
    curves_ : dict of int to list of float
        Every score of each trial, in order (one per epoch when scored every epoch, else one per rung).
    trace_ : list of (float, int, float)
        ``(seconds into the search, trial id, score)`` of every score recorded.
    target_reached_ : (int, float) or None
        The trial that reached ``target`` and when (seconds).
    executors_ : list of dict
        With ``spark``: for every pack, the rung it belonged to, its trials and the executor that trained it.
    search_time_ : float
        Wall seconds of :meth:`search` (of every session, when resumed).
    oom_splits_ : int
        Groups split after running out of memory.

    Examples
    --------
    >>> def build(hp):  # doctest: +SKIP
    ...     model = keras.Sequential([keras.Input((64,)),
    ...                               keras.layers.Dense(hp.Int("units", 16, 128, step=16), activation="relu"),
    ...                               keras.layers.Dense(10, activation="softmax")])
    ...     model.compile(keras.optimizers.Adam(hp.Float("lr", 1e-4, 1e-1, sampling="log")),
    ...                   "sparse_categorical_crossentropy", metrics=["accuracy"])
    ...     return model
    >>> tuner = Tuner(build, objective="val_accuracy", max_epochs=27, directory="runs")  # doctest: +SKIP
    >>> tuner.search(x, y, validation_data=(xv, yv))  # doctest: +SKIP
    >>> tuner.results_summary()  # doctest: +SKIP
    """

    def __init__(self, hypermodel, search_space: dict | None = None, *, objective="val_accuracy",
                 max_epochs: int = 81, factor: int = 3, oracle=None, hyperparameters=None, directory=None,
                 project_name="tuner", overwrite=False, packing="knn", early_kill=None, target=None,
                 memory_capacity=None, distance_threshold=None, group_size=4, max_group=8, reuse_models=True,
                 batch_size_key="batch_size", default_batch_size=32, seed=0, progress=True, spark=None,
                 keep_best_epoch=False):
        self.hypermodel = hypermodel
        self.search_space = search_space
        self.objective = objective_of(objective)
        self.max_epochs = max_epochs
        self.factor = factor
        self.oracle = oracle
        self.hyperparameters = hyperparameters
        self.directory = directory
        self.project_name = project_name
        self.overwrite = overwrite
        self.packing = packing
        self.early_kill = early_kill
        self.target = target
        self.memory_capacity = memory_capacity
        self.distance_threshold = distance_threshold
        self.group_size = group_size
        self.max_group = max_group
        self.reuse_models = reuse_models
        self.batch_size_key = batch_size_key
        self.default_batch_size = default_batch_size
        self.seed = seed
        self.progress = progress
        self.spark = spark
        self.keep_best_epoch = keep_best_epoch
        self._validate()
        self._build_fn = hypermodel.build if hasattr(hypermodel, "build") and not isinstance(
            hypermodel, keras.Model) else hypermodel
        if not callable(self._build_fn):
            raise TypeError(f"hypermodel must be build_fn(hp) or an object with build(hp). Got {type(hypermodel)}.")
        self.oracle_ = self._oracle()
        max_epochs, factor, seed = self.oracle_.max_epochs, self.oracle_.factor, self.oracle_.seed
        self._project = Project(directory, project_name, {"max_epochs": max_epochs, "factor": factor,
                                                          "objective": self.objective.name, "seed": seed},
                                overwrite=overwrite,
                                identity={"build_fn": build_fn_identity(self._build_fn),
                                          "search_space": self.oracle_.space.describe()})
        self.groups_, self.executors_, self.oom_splits_, self.search_time_ = [], [], 0, 0.0
        self._ckpts, self._bytes = {}, {}
        self._keeper = Scorekeeper(self.objective, max_epochs, clock=None, early_kill=early_kill, target=target,
                                   best_epoch=keep_best_epoch)
        self._training = PackTraining(self._build_fn, self.oracle_.space, seed, self.objective.name,
                                      batch_size_key, default_batch_size, keep_best_epoch=keep_best_epoch,
                                      kept_models=self._kept, search_id=uuid.uuid4().hex)
        self._progress = self._resumed = None
        if self._project.path is not None:
            self._progress = self._training.progress = RungProgress(self._project.path / "partial")
        self._executors = None
        if spark is not None:
            from .spark_packs import SparkPacks

            self._executors = SparkPacks(spark, self._project.path / "executors")
        self._restore()

    @property
    def curves_(self) -> dict:
        return self._keeper.curves

    @property
    def trace_(self) -> list:
        return self._keeper.trace

    @property
    def target_reached_(self):
        return self._keeper.target_reached

    def _validate(self):
        """Refuse a bad argument in one line before any model is built (the space is discovered by building one)."""
        if self.packing not in STRATEGIES:
            raise UsageError(f"packing must be one of {STRATEGIES}. Got {self.packing!r}; use 'none' for plain "
                             "Hyperband.")
        check_budget(self.max_epochs, self.factor)
        for name in ("max_group", "group_size"):  # the traced step grows with a pack's members
            whole_number(getattr(self, name), what=f"Tuner's {name}", low=1, high=MAX_PACK,
                         fix="Pass e.g. 8 (members per pack).")
        batch_size_of(self.default_batch_size, what="Tuner's default_batch_size")
        whole_number(self.seed, what="Tuner's seed", low=0, high=2**32 - 1, fix="Pass e.g. 0.")
        if self.memory_capacity is not None:
            number(self.memory_capacity, what="Tuner's memory_capacity", low=0, low_open=True,
                   fix="Pass the device bytes a pack may use, or None for unlimited.")
        if self.distance_threshold is not None:
            number(self.distance_threshold, what="Tuner's distance_threshold", low=0,
                   fix="Pass kNN packing's largest index distance, or None for unlimited.")
        if self.target is not None:
            number(self.target, what="Tuner's target", fix="Pass the objective's score to stop at, or None.")
        self._kept = _kept_models(self.reuse_models, self.max_group, self.memory_capacity)
        project_folder(self.directory, self.project_name)
        rule = self.early_kill
        if rule is not None and not isinstance(rule, (KillRule, HyperDrive)):
            raise TypeError(f"early_kill must be a tf_packing.KillRule, a tf_packing.HyperDrive or None. Got "
                            f"{type(rule)}.")
        if rule is not None and rule.mode != self.objective.direction:
            raise ValueError(f"early_kill has mode={rule.mode!r} but objective {self.objective.name!r} is to "
                             f"{self.objective.direction}imize. Give the rule mode={self.objective.direction!r}.")
        if self.spark is not None and self.directory is None:
            raise ValueError("Tuner(spark=...) keeps the data and the trials' checkpoints where every executor reads "
                             "them: pass directory= a folder on storage all executors share (any local folder on "
                             "one machine).")

    def _oracle(self) -> HyperbandOracle:
        """The oracle the search asks: the user's (given build_fn's space), else one of this Tuner's arguments."""
        oracle = self.oracle
        if oracle is None:
            return HyperbandOracle(self._discover_space(), max_epochs=self.max_epochs, factor=self.factor,
                                   mode=self.objective.direction, seed=self.seed)
        if not isinstance(oracle, HyperbandOracle):
            raise UsageError(f"oracle must be a tf_packing.HyperbandOracle (Hyperband is what packs rungs). Got "
                             f"{type(oracle).__name__}.")
        if oracle.trials_:
            raise UsageError("the oracle has sampled trials already: pass a new one (a search resumes from its "
                             "directory, not from an oracle).")
        both = [f"{name}={mine} to the Tuner and {getattr(oracle, name)} to the oracle"
                for name, mine, default in (("max_epochs", self.max_epochs, 81), ("factor", self.factor, 3),
                                            ("seed", self.seed, 0))
                if mine != default and mine != getattr(oracle, name)]
        if both:
            raise UsageError(f"{'; '.join(both)}: with an oracle, set them on the oracle only.")
        if oracle.mode != self.objective.direction:
            raise UsageError(f"the oracle has mode={oracle.mode!r} but objective {self.objective.name!r} is to "
                             f"{self.objective.direction}imize: make it HyperbandOracle(mode="
                             f"{self.objective.direction!r}, ...).")
        oracle.update_space(self._discover_space())
        return oracle

    def _discover_space(self) -> HyperParameters:
        """The search space: the given one, else what ``build_fn`` registers (as Keras Tuner does)."""
        space = HyperParameters.of(self.search_space) if self.search_space is not None else HyperParameters()
        if self.hyperparameters is not None:
            space.merge(self.hyperparameters)
        if self.search_space is None:
            probe = space.copy()
            self._build_fn(probe)
            space.merge(probe)
            gc.collect()
        return space

    def _restore(self):
        saved = self._project.load()
        if saved is None:
            return
        state, self._ckpts = saved
        self.oracle_.set_state(state["oracle"])
        self._keeper.curves = {int(t): c for t, c in state["curves"].items()}
        self.groups_, self.search_time_ = state["groups"], state["search_time"]
        self._keeper.trace = [tuple(row) for row in state["trace"]]
        self._keeper.target_reached = tuple(state["target_reached"]) if state["target_reached"] else None
        self.executors_ = state.get("executors", [])

    def _save(self, elapsed: float):
        state = {"oracle": self.oracle_.get_state(), "curves": self._keeper.curves, "groups": self.groups_,
                 "search_time": elapsed, "trace": self.trace_, "target_reached": self.target_reached_,
                 "executors": self.executors_}
        self._project.save(state, self._ckpts)

    # -- search ---------------------------------------------------------------------------
    def search(self, x, y=None, *, validation_data=None, callbacks=None, batch_size=None, epochs=None,
               verbose=None):
        """Run every Hyperband bracket on ``(x, y)``, scoring on ``validation_data``; return self.

        ``callbacks`` are Keras callbacks copied for every trial (epoch-level hooks, as in
        ``model.fit``); ``batch_size`` is the batch size of trials whose space has no
        ``batch_size_key``. ``epochs`` and ``verbose`` are accepted for Keras Tuner scripts:
        Hyperband's ``max_epochs`` sets the epochs, ``progress`` the output.
        """
        if self.objective.name.startswith("val_") and validation_data is None:
            raise ValueError(f"objective {self.objective.name!r} is scored on validation data: pass "
                             "validation_data=(x_val, y_val) to search().")
        if epochs is not None and epochs != self.oracle_.max_epochs:
            log.warning("search(epochs=%s) is ignored: Hyperband trains each trial to at most max_epochs=%d",
                        epochs, self.oracle_.max_epochs)
        self._data, self._val = (x, y), validation_data
        training = self._training
        training.callbacks = list(callbacks or [])
        training.fallback_batch_size = batch_size or self.default_batch_size
        training.every_epoch = (self.early_kill is not None or self.target is not None or bool(training.callbacks)
                                or self.keep_best_epoch)
        previous = self.search_time_
        self._start = time.perf_counter() - previous
        self._wall_start = time.time() - previous
        self._keeper.clock = lambda: time.perf_counter() - self._start
        if self._executors is not None:
            self._executors.share_data(self._data, validation_data)
        self._save(previous)  # settings and identity first: progress inside the first rung resumes too
        self._resumed = self._progress.read() if self._progress is not None else None  # the rung under way
        bar = tqdm(total=self._planned_trial_epochs(), unit="trial-epoch", disable=not self.progress,
                   desc=f"hyperband[{self.packing}]")
        try:
            while self.target_reached_ is None and (rung := self.oracle_.next_rung()) is not None:
                bar.set_postfix_str(f"bracket {rung.bracket} rung {rung.index}: {len(rung.trials)} x "
                                    f"{rung.epochs} ep")
                try:
                    scores, killed = self._run_rung(rung, len(self.groups_), bar)
                except TargetReached:
                    break
                self._check_scores(rung, scores)
                kept = set(self.oracle_.end_rung(scores, killed))
                for trial in rung.trials:  # drop the state of trials that stop here
                    if trial.trial_id not in kept and trial.status != "completed":
                        self._ckpts.pop(trial.trial_id, None)
                if self._executors is not None:
                    self._executors.keep_only(kept)
                self._save(time.perf_counter() - self._start)
                if self._progress is not None:
                    self._progress.clear()
        finally:
            bar.close()
            models_kept(0).clear()
            if self._executors is not None:
                self._executors.clear()
        self.search_time_ = time.perf_counter() - self._start
        self._save(self.search_time_)
        best = self._best_trial()
        self.best_config_ = best.config if best else None
        self.best_score_ = best.score if best else None
        log.info("search done in %.1f s: best %s = %s with %s", self.search_time_, self.objective.name,
                 self.best_score_, self.best_config_)
        return self

    def _planned_trial_epochs(self) -> int:
        total = 0
        for s in range(max_bracket(self.oracle_.max_epochs, self.oracle_.factor), -1, -1):
            done = 0
            for n, r in bracket_rungs(s, self.oracle_.max_epochs, self.oracle_.factor):
                total += n * (r - done)
                done = r
        return total

    def _build(self, trial):
        return self._training.build(trial)

    def _model_bytes(self, trial) -> int:
        """Estimated device bytes of ``trial``'s model: built once per configuration, then dropped.

        Without a ``memory_capacity`` there is nothing to weigh the estimates against, and building
        every configuration once more only for them cost about a sixth of a small search: 0.
        """
        if self.memory_capacity is None:
            return 0
        key = repr(sorted(trial.config.items()))
        if key not in self._bytes:
            self._bytes[key] = model_bytes(self._build(trial), self._training.batch_size(trial))
            gc.collect()  # Keras models hold reference cycles: free this one's variables now
        return self._bytes[key]

    def _run_rung(self, rung, rung_no, bar):
        trials = rung.trials
        memory = [self._model_bytes(t) for t in trials]
        groups = pack_opt([t.config for t in trials], self.oracle_.space, memory, strategy=self.packing,
                          capacity=self.memory_capacity, threshold=self.distance_threshold,
                          group_size=self.group_size, max_group=self._largest_pack(len(trials)),
                          key=self.batch_size_key, seed=self.oracle_.seed + rung_no)
        groups = [[trials[i] for i in group] for group in self._promising_first(groups, trials)]
        self._keeper.start_rung()
        done = self._resume_mid_rung(rung)
        groups = [g for g in ([t for t in group if t.trial_id not in done] for group in groups) if g]
        if self._progress is not None:
            self._progress.begin()
        self.groups_.append({"bracket": rung.bracket, "rung": rung.index, "epochs": rung.epochs,
                             "sizes": [len(g) for g in groups]})
        if self._executors is not None:
            self._run_on_executors(rung, rung_no, groups, bar)
        else:
            for group in groups:
                self._ckpts.update(self._train_group(group, rung.epochs))
                bar.update(sum(rung.epochs - t.epochs_done for t in group))
        return self._keeper.scores, self._keeper.killed

    def _resume_mid_rung(self, rung) -> set:
        """Take in the progress this rung made before the search stopped; return the trials that need no more.

        Each trial with progress continues from the checkpoint of the last epoch it finished, its scores of
        this rung recorded again; a trial that had finished the rung, or was killed in it, is not trained.
        """
        resumed, self._resumed = self._resumed or {}, None
        done = set()
        for trial in rung.trials:
            progress = resumed.get(trial.trial_id)
            if progress is None:
                continue
            self._ckpts[trial.trial_id] = progress.checkpoint
            if self._executors is not None:  # the executors read this checkpoint, not the rung's start
                self._executors.shared.pop(trial.trial_id, None)
            self._keeper.curves.setdefault(trial.trial_id, []).extend(progress.scores)
            self._keeper.trace.extend(progress.trace)
            for score in progress.scores:
                self._keeper.rank(trial.trial_id, score)
            if progress.killed:
                self._keeper.killed.add(trial.trial_id)
            if progress.killed or progress.checkpoint.epochs_done >= rung.epochs:
                done.add(trial.trial_id)
        if resumed:
            log.info("bracket %d rung %d resumes mid-rung: %d trials from the last epoch they finished, %d of them "
                     "done", rung.bracket, rung.index, len(resumed), len(done))
        return done

    def _largest_pack(self, trials: int) -> int:
        """``max_group``; on executors, the size that splits the rung into a multiple of the task slots.

        The fewest packs ``max_group`` allows, rounded up to a multiple of the slots (or one per trial when
        there are fewer trials than slots), then equal sizes: 27 trials on 2 slots are packs of 7, 7, 7 and 6,
        not 8, 8, 8 and 3, whose last slot would idle while the first trains its second pack of 8.
        """
        if self._executors is None:
            return self.max_group
        slots = self._executors.slots
        packs = math.ceil(trials / self.max_group)
        packs = math.ceil(packs / slots) * slots if trials >= slots else trials
        return max(1, math.ceil(trials / packs))

    def _train_group(self, trials, epochs) -> dict:
        checkpoints = {t.trial_id: self._ckpts[t.trial_id] for t in trials if t.trial_id in self._ckpts}
        trained, splits = self._training.train(trials, epochs, checkpoints, self._data, self._val, self._keeper)
        self.oom_splits_ += splits
        return trained

    def _run_on_executors(self, rung, rung_no, groups, bar):
        """Train the rung's packs as the tasks of one Spark job, then take in what each task recorded."""
        outcomes = self._executors.run(
            groups, rung.epochs, self._training, self._keeper, self._ckpts, rung_no=rung_no,
            wall_start=self._wall_start, deterministic=_deterministic(),
            description=f"tf_packing.Tuner: bracket {rung.bracket} rung {rung.index}, {len(rung.trials)} trials x "
                        f"{rung.epochs} epochs in {len(groups)} packs")
        for outcome in outcomes:
            for trial in outcome.trials:  # a branch met while building, or the score that reached the target
                self.oracle_.trials_[trial.trial_id].config.update(trial.config)
                self.oracle_.trials_[trial.trial_id].scores = trial.scores
            self.oracle_.space.merge(outcome.space)
            self._keeper.merge(outcome.keeper)
            self._ckpts.update(self._executors.read(outcome))
            self.oom_splits_ += outcome.oom_splits
            self.executors_.append({"bracket": rung.bracket, "rung": rung.index, "executor": outcome.executor,
                                    "trials": [t.trial_id for t in outcome.trials]})
        bar.update(sum(rung.epochs - t.epochs_done for t in rung.trials))
        if self._keeper.target_reached is not None:
            raise TargetReached()

    def _promising_first(self, groups, trials) -> list:
        """With HyperDrive, the packs holding promising trials train first (POP's exploit before explore)."""
        if not isinstance(self.early_kill, HyperDrive):
            return groups
        curves = {t.trial_id: self._keeper.curves[t.trial_id] for t in trials if self._keeper.curves.get(t.trial_id)}
        if curves:
            left = {t: self.oracle_.max_epochs - len(c) for t, c in curves.items()}
            self._keeper.labels.update(self.early_kill.classify(curves, epochs_left=left, slots=self.max_group,
                                                                best=self._keeper.reference()))
        rank = {"promising": 0, "opportunistic": 1, "poor": 2}
        order = lambda g: min(rank.get(self._keeper.labels.get(trials[i].trial_id), 1) for i in g)
        return sorted(groups, key=order)  # stable: packing order within a class

    def _best_trial(self):
        """The trial that reached the target; else the best trained to R epochs; else the oracle's best."""
        if self.target_reached_ is not None:
            return self.oracle_.trials_[self.target_reached_[0]]
        completed = [t for t in self.oracle_.trials_.values() if t.status == "completed"]
        if not completed:
            return self.oracle_.best_trial()
        sign = -1 if self.objective.direction == "max" else 1
        return min(completed, key=lambda t: (sign * t.score, t.trial_id))

    def _check_scores(self, rung, scores):
        """A rung where no score is a number is a setup error, not a search result: say what to check."""
        curves = self._keeper.curves
        if not scores or any(math.isfinite(curves[t][-1]) for t in scores if curves.get(t)):
            return
        x, y = self._data
        causes = []
        if y is not None and np.ndim(y) == 2 and np.shape(y)[1] > 1:
            causes.append(f"the labels are one-hot (y has shape {np.shape(y)}): compile with "
                          "loss='categorical_crossentropy', or pass y.argmax(1) with a sparse loss")
        if isinstance(x, np.ndarray) and np.issubdtype(x.dtype, np.floating) and not np.all(np.isfinite(x)):
            causes.append("x holds NaN or infinite values")
        causes.append("every configuration diverged (try lower learning rates)")
        raise ValueError(f"no trial of bracket {rung.bracket} rung {rung.index} scored a number for "
                         f"{self.objective.name!r} (all {len(scores)} NaN or infinite). Likely: "
                         f"{'; or '.join(causes)}. Check one model with model.fit(x, y, validation_data=...).")

    # -- results --------------------------------------------------------------------------
    def results(self) -> list:
        """One row per trial: id, bracket, configuration, epochs trained, latest score and status."""
        rows = []
        for t in self.oracle_.trials_.values():
            status = self._keeper.labels.get(t.trial_id) if t.status == "running" else t.status
            rows.append({"trial": t.trial_id, "bracket": t.bracket, **t.config, "epochs": t.epochs_done,
                         self.objective.name: t.score, "status": status or t.status})
        key = self.objective.name
        sign = -1 if self.objective.direction == "max" else 1
        rank = lambda r: (r[key] is None or not math.isfinite(r[key]), sign * (r[key] or 0), r["trial"])
        return sorted(rows, key=rank)

    def results_table(self, top: int | None = 10) -> str:
        """The best ``top`` trials as a Markdown table."""
        rows = self.results()[:top]
        if not rows:
            return "(no trials)"
        headers = list(dict.fromkeys(h for r in rows for h in r))
        fmt = lambda v: f"{v:.4g}" if isinstance(v, float) else ("" if v is None else str(v))
        lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(fmt(r.get(h)) for h in headers) + " |" for r in rows]
        return "\n".join(lines)

    def results_summary(self, num_trials: int = 10) -> None:
        """Print the search time, the objective and the best ``num_trials`` trials (Keras Tuner's name)."""
        where = f" in {self._project.path}" if self._project.path else ""
        print(f"Results summary{where}: pack-aware Hyperband ({self.packing}), {self.search_time_:.1f} s, "
              f"{len(self.oracle_.trials_)} trials")
        print(f"Objective: {self.objective.name} ({self.objective.direction}); best {self.best_score_} with "
              f"{self.best_config_}")
        print(self.results_table(num_trials))

    def search_space_summary(self) -> None:
        """Print every hyper-parameter of the space (Keras Tuner's name)."""
        print(f"Search space summary: {len(self.oracle_.space.space)} hyper-parameters")
        for p in self.oracle_.space.space:
            shown = p.finite_values() if p.kind in ("choice", "boolean", "fixed") else \
                f"[{p.min_value}, {p.max_value}] step={p.step} sampling={p.sampling}"
            print(f"{p.name} ({p.kind}): {shown}")

    def get_best_hyperparameters(self, num_trials: int = 1) -> list:
        """The best ``num_trials`` configurations as HyperParameters (``.values`` is the dict)."""
        return [self.oracle_.space.copy(t.config) for t in self._ranked()[:num_trials]]

    def get_best_models(self, num_models: int = 1) -> list:
        """The best ``num_models`` trials' models, with their trained weights and optimizer state."""
        from ..repack import load

        ranked = [t for t in self._ranked() if t.trial_id in self._ckpts][:num_models]
        if not ranked:
            raise RuntimeError("no trained trial to return. Run search() first, with early_kill off or a lower "
                               "kill threshold if every trial was killed.")
        return [load(self._build(t), checkpoint=self._ckpts[t.trial_id]) for t in ranked]

    def best_model(self):
        """The best trial's model with its trained weights and optimizer state."""
        return self.get_best_models(1)[0]

    def _ranked(self) -> list:
        best = self._best_trial()
        rest = [self.oracle_.trials_[r["trial"]] for r in self.results()]
        return ([best] if best is not None else []) + [t for t in rest if t is not best and t.scores]


def _kept_models(reuse_models, max_group: int, memory_capacity) -> int:
    """How many models a process keeps alive for reuse (see ``reuse_models``)."""
    if not isinstance(reuse_models, int) or reuse_models < 0:  # bool is an int
        raise UsageError(f"reuse_models must be True, False or a number of models >= 0. Got {reuse_models!r}.")
    if memory_capacity is not None or reuse_models is False:
        return 0
    return 4 * max_group if reuse_models is True else reuse_models


def _deterministic() -> bool:
    """Whether this process runs TensorFlow's ops deterministically (the executors then do too)."""
    try:
        from tensorflow.python.framework.config import is_op_determinism_enabled
    except ImportError:  # not in this TensorFlow's layout: executors keep their default
        return False
    return bool(is_op_determinism_enabled())
