"""Pack-aware Hyperband for Keras, with Keras Tuner's API: the adapter that trains each rung as packs.

A Keras Tuner user switches by changing the import: ``Tuner(build_fn, objective=
"val_accuracy", max_epochs=27)`` takes the same ``build_fn(hp)`` (``hp.Choice``,
``hp.Int``, ``hp.Float``, ``hp.Boolean``, ``hp.Fixed``), ``search(x, y,
validation_data=..., callbacks=...)`` trains, and ``results_summary()``,
``get_best_hyperparameters()`` and ``get_best_models()`` read the outcome. A
``directory`` makes the search resumable, as in Keras Tuner.

Underneath, :class:`Tuner` asks :class:`~tf_packing.hyperband.HyperbandOracle`
for the next rung, splits its trials into memory-feasible groups with
:func:`~tf_packing.packing_policy.pack_opt`, trains every group as one
:class:`~tf_packing.packed.PackedModel` from the trials' checkpoints, and reports
each member's score back. The oracle decides; this module only translates.

A pack's models are built only when that pack runs and dropped when it ends
(their state lives on as host checkpoints), so ``memory_capacity`` bounds the
models alive at once. When a group runs out of device memory
(``tf.errors.ResourceExhaustedError``) it is split in two and each half is
retried from the rung's checkpoints.

Early termination (``early_kill``): a :class:`~tf_packing.early_kill.KillRule`
(fixed threshold) or :class:`~tf_packing.hyperdrive.HyperDrive` (predicted
curve); a killed trial leaves its pack at once and is never promoted. With
HyperDrive, each rung trains the packs holding promising trials first.
"""

from __future__ import annotations

import gc
import logging
import math
import time

import keras
import numpy as np
import tensorflow as tf
from tqdm.auto import tqdm

from .early_kill import KillRule
from .hyperband import HyperbandOracle, bracket_rungs, max_bracket
from .hyperdrive import HyperDrive
from .hyperparameters import HyperParameters
from .memory import model_bytes
from .objective import objective_of
from .packed import Member, PackedModel
from .packing_policy import STRATEGIES, pack_opt, split_group
from .project import Project, build_fn_identity

__all__ = ["Tuner"]

log = logging.getLogger(__name__)


class _TargetReached(Exception):
    """Raised out of a pack's fit when a trial reaches the tuner's ``target``: the search is over."""


class _Reporter(keras.callbacks.Callback):
    """Hands one trial's epoch-end logs to the tuner, and stops the trial when the tuner kills it."""

    def __init__(self, tuner, trial):
        super().__init__()
        self.tuner, self.trial = tuner, trial

    def on_epoch_end(self, epoch, logs=None):
        if self.tuner._record(self.trial, logs or {}):
            self.model.stop_training = True


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
    hyperparameters : HyperParameters, optional
        Hyper-parameters declared ahead (e.g. ``hp.Fixed`` overrides), merged
        with those ``build_fn`` registers; as in Keras Tuner.
    directory, project_name : str, optional
        Where the search keeps its state: a later ``search`` with the same
        folder resumes from the last finished rung. Default: in memory only.
        A folder holding another search is refused with ``ValueError``: one
        written under another ``max_epochs``, ``factor``, objective or seed,
        by another ``build_fn`` (module and qualified name, and its source when
        :func:`inspect.getsource` reads it) or over another search space (the
        space as ``build_fn`` declares it). A folder written before the last
        two were recorded is resumed with a warning.
    overwrite : bool, default=False
        Start afresh even when ``directory/project_name`` holds a search.
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
        Random packing's group size.
    max_group : int, default=8
        Most members per pack (bounds the size of the traced step).
    batch_size_key : str, default="batch_size"
        Hyper-parameter holding the batch size; else ``search(batch_size=)``,
        else ``default_batch_size``.
    default_batch_size : int, default=32
    seed : int, default=0
        Seed of sampling, packing, data order and each trial's initial weights.
    progress : bool, default=True
        Show a tqdm bar over trial-epochs.

    Attributes
    ----------
    oracle_ : HyperbandOracle
    best_config_ : dict
    best_score_ : float
    groups_ : list of dict
        For every rung: bracket, rung, epochs and the sizes of its packs.
    trace_ : list of (float, int, float)
        ``(seconds into the search, trial id, score)`` of every score recorded.
    target_reached_ : (int, float) or None
        The trial that reached ``target`` and when (seconds).
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
                 max_epochs: int = 81, factor: int = 3, hyperparameters=None, directory=None,
                 project_name="tuner", overwrite=False, packing="knn", early_kill=None, target=None,
                 memory_capacity=None, distance_threshold=None, group_size=4, max_group=8,
                 batch_size_key="batch_size", default_batch_size=32, seed=0, progress=True):
        self.hypermodel = hypermodel
        self.search_space = search_space
        self.objective = objective_of(objective)
        self.max_epochs = max_epochs
        self.factor = factor
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
        self.batch_size_key = batch_size_key
        self.default_batch_size = default_batch_size
        self.seed = seed
        self.progress = progress
        self._validate()
        self._build_fn = hypermodel.build if hasattr(hypermodel, "build") and not isinstance(
            hypermodel, keras.Model) else hypermodel
        if not callable(self._build_fn):
            raise TypeError(f"hypermodel must be build_fn(hp) or an object with build(hp). Got {type(hypermodel)}.")
        self.oracle_ = HyperbandOracle(self._discover_space(), max_epochs=max_epochs, factor=factor,
                                       mode=self.objective.direction, seed=seed)
        self._project = Project(directory, project_name, {"max_epochs": max_epochs, "factor": factor,
                                                          "objective": self.objective.name, "seed": seed},
                                overwrite=overwrite,
                                identity={"build_fn": build_fn_identity(self._build_fn),
                                          "search_space": self.oracle_.space.describe()})
        self.groups_, self.trace_, self.oom_splits_, self.search_time_ = [], [], 0, 0.0
        self.target_reached_ = None
        self._ckpts, self._curves, self._bytes, self._labels = {}, {}, {}, {}
        self._restore()

    def _validate(self):
        if self.packing not in STRATEGIES:
            raise ValueError(f"packing must be one of {STRATEGIES}. Got {self.packing!r}; use 'none' for plain "
                             "Hyperband.")
        rule = self.early_kill
        if rule is not None and not isinstance(rule, (KillRule, HyperDrive)):
            raise TypeError(f"early_kill must be a tf_packing.KillRule, a tf_packing.HyperDrive or None. Got "
                            f"{type(rule)}.")
        if rule is not None and rule.mode != self.objective.direction:
            raise ValueError(f"early_kill has mode={rule.mode!r} but objective {self.objective.name!r} is to "
                             f"{self.objective.direction}imize. Give the rule mode={self.objective.direction!r}.")
        if self.target is not None and not math.isfinite(self.target):
            raise ValueError(f"target must be a finite score. Got {self.target!r}.")

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
        self._curves = {int(t): c for t, c in state["curves"].items()}
        self.groups_, self.search_time_ = state["groups"], state["search_time"]
        self.trace_ = [tuple(row) for row in state["trace"]]
        self.target_reached_ = tuple(state["target_reached"]) if state["target_reached"] else None

    def _save(self, elapsed: float):
        state = {"oracle": self.oracle_.get_state(), "curves": self._curves, "groups": self.groups_,
                 "search_time": elapsed, "trace": self.trace_, "target_reached": self.target_reached_}
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
        if epochs is not None and epochs != self.max_epochs:
            log.warning("search(epochs=%s) is ignored: Hyperband trains each trial to at most max_epochs=%d",
                        epochs, self.max_epochs)
        self._data, self._val, self._user_callbacks = (x, y), validation_data, list(callbacks or [])
        self._fit_batch_size = batch_size
        self._every_epoch = self.early_kill is not None or self.target is not None or bool(self._user_callbacks)
        previous = self.search_time_
        self._start = time.perf_counter() - previous
        bar = tqdm(total=self._planned_trial_epochs(), unit="trial-epoch", disable=not self.progress,
                   desc=f"hyperband[{self.packing}]")
        try:
            while self.target_reached_ is None and (rung := self.oracle_.next_rung()) is not None:
                bar.set_postfix_str(f"bracket {rung.bracket} rung {rung.index}: {len(rung.trials)} x "
                                    f"{rung.epochs} ep")
                try:
                    scores, killed = self._run_rung(rung, len(self.groups_), bar)
                except _TargetReached:
                    break
                self._check_scores(rung, scores)
                kept = set(self.oracle_.end_rung(scores, killed))
                for trial in rung.trials:  # drop the state of trials that stop here
                    if trial.trial_id not in kept and trial.status != "completed":
                        self._ckpts.pop(trial.trial_id, None)
                self._save(time.perf_counter() - self._start)
        finally:
            bar.close()
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
        for s in range(max_bracket(self.max_epochs, self.factor), -1, -1):
            done = 0
            for n, r in bracket_rungs(s, self.max_epochs, self.factor):
                total += n * (r - done)
                done = r
        return total

    def _batch_size(self, trial) -> int:
        fallback = self._fit_batch_size or self.default_batch_size
        return int(trial.config.get(self.batch_size_key, fallback))

    def _build(self, trial):
        keras.utils.set_random_seed(self.seed * 1_000_003 + trial.trial_id)
        hp = self.oracle_.space.copy(trial.config)
        model = self._build_fn(hp)
        if not isinstance(model, keras.Model) or not model.built:
            raise ValueError(f"build_fn returned {type(model).__name__}, not a built keras.Model, for "
                             f"{trial.config}. Start the model with keras.Input and return it.")
        new = self.oracle_.space.merge(hp)  # a branch the discovery call did not take
        if new:
            log.info("hyper-parameters %s joined the search space (first met by trial %d)", new, trial.trial_id)
        trial.config.update({k: v for k, v in hp.values.items() if k not in trial.config})
        return model

    def _model_bytes(self, trial) -> int:
        """Estimated device bytes of ``trial``'s model: built once per configuration, then dropped.

        Without a ``memory_capacity`` there is nothing to weigh the estimates against, and building
        every configuration once more only for them cost about a sixth of a small search: 0.
        """
        if self.memory_capacity is None:
            return 0
        key = repr(sorted(trial.config.items()))
        if key not in self._bytes:
            self._bytes[key] = model_bytes(self._build(trial), self._batch_size(trial))
            gc.collect()  # Keras models hold reference cycles: free this one's variables now
        return self._bytes[key]

    def _run_rung(self, rung, rung_no, bar):
        trials = rung.trials
        memory = [self._model_bytes(t) for t in trials]
        groups = pack_opt([t.config for t in trials], self.oracle_.space, memory, strategy=self.packing,
                          capacity=self.memory_capacity, threshold=self.distance_threshold,
                          group_size=self.group_size, max_group=self.max_group, key=self.batch_size_key,
                          seed=self.seed + rung_no)
        groups = self._promising_first(groups, trials)
        self.groups_.append({"bracket": rung.bracket, "rung": rung.index, "epochs": rung.epochs,
                             "sizes": [len(g) for g in groups]})
        self._scores, self._killed = {}, set()
        for group in groups:
            self._train_group([trials[i] for i in group], rung.epochs, bar)
        return self._scores, self._killed

    def _promising_first(self, groups, trials) -> list:
        """With HyperDrive, the packs holding promising trials train first (POP's exploit before explore)."""
        if not isinstance(self.early_kill, HyperDrive):
            return groups
        curves = {t.trial_id: self._curves[t.trial_id] for t in trials if self._curves.get(t.trial_id)}
        if curves:
            left = {t: self.max_epochs - len(c) for t, c in curves.items()}
            self._labels.update(self.early_kill.classify(curves, epochs_left=left, slots=self.max_group,
                                                         best=self._reference()))
        rank = {"promising": 0, "opportunistic": 1, "poor": 2}
        order = lambda g: min(rank.get(self._labels.get(trials[i].trial_id), 1) for i in g)
        return sorted(groups, key=order)  # stable: packing order within a class

    def _train_group(self, trials, epochs, bar):
        """Train ``trials`` as one pack to ``epochs``; on OOM, split and retry each half."""
        try:
            self._fit_pack(trials, epochs)
        except tf.errors.ResourceExhaustedError as e:
            halves = split_group(list(range(len(trials))))  # raises for a single trial
            self.oom_splits_ += 1
            log.warning("pack of %d trials ran out of memory (%s); splitting it into %s and retrying from "
                        "the rung's checkpoints", len(trials), str(e).splitlines()[0][:120],
                        [len(h) for h in halves])
            for trial in trials:
                self._scores.pop(trial.trial_id, None)
                self._killed.discard(trial.trial_id)
                del self._curves[trial.trial_id][trial.epochs_done:]
            for half in halves:
                self._train_group([trials[i] for i in half], epochs, bar)
            return
        bar.update(sum(epochs - t.epochs_done for t in trials))

    def _fit_pack(self, trials, epochs):
        """Build the group's models, train them as one pack, keep their checkpoints, drop the models."""
        (x, y), val = self._data, self._val
        pack = PackedModel([])
        by_name, callbacks = {}, {}
        for trial in trials:
            name = f"t{trial.trial_id}"
            by_name[name] = trial
            self._curves.setdefault(trial.trial_id, [])
            pack.add(Member(name, self._build(trial), self._batch_size(trial), epochs - trial.epochs_done),
                     self._ckpts.get(trial.trial_id))
            callbacks[name] = [*_copies(self._user_callbacks), _Reporter(self, trial)]

        def score(packed, names):
            for name, logs in packed.evaluate(*val[:2], names=names).items():
                self._record(by_name[name], {f"val_{k}": v for k, v in logs.items()})

        if self._every_epoch:
            pack.fit(x, y, validation_data=val, callbacks=callbacks, shuffle=True, seed=self.seed, verbose=0)
        else:  # scored once, as each member finishes the rung
            scored_on_validation = val is not None and self.objective.name.startswith("val_")
            pack.fit(x, y, callbacks=callbacks, shuffle=True, seed=self.seed, verbose=0,
                     on_step=(lambda packed, plan: score(packed, plan.finished)) if scored_on_validation else None)
            unscored = [n for n in pack.members if by_name[n].trial_id not in self._scores]
            if unscored and scored_on_validation:  # stopped mid-epoch (diverged, or a callback stopped it)
                score(pack, unscored)
        for name in list(pack.members):
            self._ckpts[by_name[name].trial_id] = pack.free(name)
        del pack
        gc.collect()  # the group's models go before the next group's are built

    def _record(self, trial, logs: dict) -> bool:
        """Record a trial's epoch-end score; True when the trial is to stop here (killed)."""
        name = self.objective.name
        if name not in logs:
            if name.startswith("val_") and not any(k.startswith("val_") for k in logs):
                return False  # a training-only epoch end (scored at the member's end)
            raise ValueError(f"objective {name!r} is not among the model's logs {sorted(logs)}. Compile the "
                             f"model in build_fn with the metric it names (metrics=[{name.removeprefix('val_')!r}]).")
        score = float(logs[name])
        curve = self._curves[trial.trial_id]
        curve.append(score)
        self.trace_.append((time.perf_counter() - self._start, trial.trial_id, score))
        if not math.isfinite(score):
            log.warning("trial %d scored %s=%s after %d epochs; it ranks last", trial.trial_id, name, score,
                        len(curve))
        self._scores[trial.trial_id] = score if math.isfinite(score) else self.objective.worst
        if self.target is not None and math.isfinite(score) and not self.objective.better(self.target, score):
            self.target_reached_ = (trial.trial_id, self.trace_[-1][0])
            trial.scores.append([len(curve), score])
            log.info("trial %d reached the target %s=%s after %.1f s", trial.trial_id, name, score,
                     self.target_reached_[1])
            raise _TargetReached()
        rule = self.early_kill
        if rule is None or not rule.should_kill(curve, epochs_left=self.max_epochs - len(curve),
                                                best=self._reference()):
            return False
        self._killed.add(trial.trial_id)
        self._labels[trial.trial_id] = "poor"
        log.info("early kill: trial %d at %s=%.4f after %d epochs", trial.trial_id, name, score, len(curve))
        return True

    def _reference(self):
        """The score a trial must reach to be worth training: the target, else the best so far."""
        if self.target is not None:
            return self.target
        finite = [s for _, _, s in self.trace_ if math.isfinite(s)]
        if not finite:
            return None
        return max(finite) if self.objective.direction == "max" else min(finite)

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
        if not scores or any(math.isfinite(self._curves[t][-1]) for t in scores if self._curves.get(t)):
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
            status = self._labels.get(t.trial_id) if t.status == "running" else t.status
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
        from .checkpoint import load

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


def _copies(callbacks) -> list:
    """Each trial's own copies of the user's callbacks (Keras Tuner copies them per trial too)."""
    import copy

    try:
        return [copy.deepcopy(cb) for cb in callbacks]
    except (TypeError, ValueError) as e:
        raise ValueError(f"the search callbacks cannot be copied for each trial ({e}). Pass callbacks that hold "
                         "no open files or live models.") from e
