"""Pack-aware Hyperband for Keras: the thin adapter that trains each rung as packs (spec 6.2).

:class:`Tuner` asks :class:`~tf_packing.hyperband.HyperbandOracle` for the next
rung, splits its trials into memory-feasible groups with
:func:`~tf_packing.packing_policy.pack_opt`, trains every group as one
:class:`~tf_packing.packed.PackedModel` from the trials' checkpoints, scores each
member on the validation data separately, and reports the scores back. The
oracle decides; this module only translates.

A pack's models are built only when that pack runs and dropped when it ends
(their state lives on as host checkpoints), so ``memory_capacity`` bounds the
models alive at once. When a group runs out of device memory
(``tf.errors.ResourceExhaustedError``) it is split in two and each half is
retried from the rung's checkpoints.
"""

from __future__ import annotations

import gc
import logging
import time

import keras
import tensorflow as tf
from tqdm.auto import tqdm

from .early_kill import KillRule
from .hyperband import HyperbandOracle, bracket_rungs, max_bracket
from .memory import model_bytes
from .packed import Member, PackedModel
from .packing_policy import STRATEGIES, pack_opt, split_group

__all__ = ["Tuner"]

log = logging.getLogger(__name__)

_OBJECTIVES = {"val_accuracy": ("accuracy", "max"), "val_loss": ("loss", "min")}


class Tuner:
    """Hyperband over ``search_space`` with each rung's trials trained in packs.

    Parameters
    ----------
    build_fn : callable
        ``build_fn(config) -> keras.Model``: a built, compiled model for one
        configuration (a dict with one value per hyper-parameter), compiled
        with the metric the objective names (``metrics=["accuracy"]`` for
        ``"val_accuracy"``).
    search_space : dict of str to list
        Values of each hyper-parameter, numeric lists in ascending order.
    max_epochs : int, default=81
        Hyperband's R. One iteration costs about ``R * (log_eta R + 1)^2`` epochs.
    factor : int, default=3
        Hyperband's eta.
    packing : {"knn", "random", "batch_size", "none"}, default="knn"
        How each rung is split into packs; ``"none"`` is plain Hyperband.
    objective : {"val_accuracy", "val_loss"}, default="val_accuracy"
        What successive halving ranks by.
    memory_capacity : float, optional
        Device bytes a pack's estimate may use; default unlimited.
    distance_threshold : int, optional
        kNN packing's largest index distance to the centroid; default unlimited.
    group_size : int, default=4
        Random packing's group size.
    max_group : int, default=8
        Most members per pack (bounds the size of the traced step).
    batch_size_key : str, default="batch_size"
        Hyper-parameter holding the batch size; ``default_batch_size`` when absent.
    default_batch_size : int, default=32
    early_kill : KillRule, optional
        HyperDrive-style kill: members evaluated every epoch and freed when the
        rule fires. Default: off (members are evaluated at rung ends only).
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
    search_time_ : float
        Wall seconds of :meth:`search`.
    oom_splits_ : int
        Groups split after running out of memory.

    Examples
    --------
    >>> def build(config):  # doctest: +SKIP
    ...     model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(10, activation="softmax")])
    ...     model.compile(keras.optimizers.Adam(config["lr"]), "sparse_categorical_crossentropy")
    ...     return model
    >>> tuner = Tuner(build, {"lr": [1e-3, 1e-2], "batch_size": [32, 64]}, max_epochs=9)  # doctest: +SKIP
    >>> tuner.search(x, y, validation_data=(xv, yv)).print_results()  # doctest: +SKIP
    """

    def __init__(self, build_fn, search_space: dict, *, max_epochs: int = 81, factor: int = 3, packing="knn",
                 objective="val_accuracy", memory_capacity=None, distance_threshold=None, group_size=4,
                 max_group=8, batch_size_key="batch_size", default_batch_size=32, early_kill=None, seed=0,
                 progress=True):
        self.build_fn = build_fn
        self.search_space = search_space
        self.max_epochs = max_epochs
        self.factor = factor
        self.packing = packing
        self.objective = objective
        self.memory_capacity = memory_capacity
        self.distance_threshold = distance_threshold
        self.group_size = group_size
        self.max_group = max_group
        self.batch_size_key = batch_size_key
        self.default_batch_size = default_batch_size
        self.early_kill = early_kill
        self.seed = seed
        self.progress = progress

    def _validate(self):
        if self.packing not in STRATEGIES:
            raise ValueError(f"packing must be one of {STRATEGIES}. Got {self.packing!r}; use 'none' for plain "
                             "Hyperband.")
        if self.objective not in _OBJECTIVES:
            raise ValueError(f"objective must be one of {sorted(_OBJECTIVES)}. Got {self.objective!r}.")
        if self.early_kill is not None and not isinstance(self.early_kill, KillRule):
            raise TypeError(f"early_kill must be a tf_packing.KillRule or None. Got {type(self.early_kill)}.")

    # -- search ---------------------------------------------------------------------------
    def search(self, x, y, *, validation_data):
        """Run every Hyperband bracket on ``(x, y)``, scoring on ``validation_data``; return self."""
        self._validate()
        metric, mode = _OBJECTIVES[self.objective]
        self._metric = metric
        self.oracle_ = HyperbandOracle(self.search_space, max_epochs=self.max_epochs, factor=self.factor,
                                       mode=mode, seed=self.seed)
        self.groups_, self.oom_splits_, self._ckpts, self._curves, self._bytes = [], 0, {}, {}, {}
        self._data, self._val = (x, y), validation_data
        start = time.perf_counter()
        bar = tqdm(total=self._planned_trial_epochs(), unit="trial-epoch", disable=not self.progress,
                   desc=f"hyperband[{self.packing}]")
        try:
            rung_no = 0
            while (rung := self.oracle_.next_rung()) is not None:
                bar.set_postfix_str(f"bracket {rung.bracket} rung {rung.index}: {len(rung.trials)} x "
                                    f"{rung.epochs} ep")
                scores, killed = self._run_rung(rung, rung_no, bar)
                kept = set(self.oracle_.end_rung(scores, killed))
                for trial in rung.trials:  # drop the state of trials that stop here
                    if trial.trial_id not in kept and trial.status != "completed":
                        self._ckpts.pop(trial.trial_id, None)
                rung_no += 1
        finally:
            bar.close()
        self.search_time_ = time.perf_counter() - start
        best = self._best_trial()
        self.best_config_ = best.config if best else None
        self.best_score_ = best.score if best else None
        log.info("search done in %.1f s: best %s = %s with %s", self.search_time_, self.objective,
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
        return int(trial.config.get(self.batch_size_key, self.default_batch_size))

    def _build(self, trial):
        keras.utils.set_random_seed(self.seed * 1_000_003 + trial.trial_id)
        model = self.build_fn(dict(trial.config))
        if not model.built:
            raise ValueError(f"build_fn returned an unbuilt model for {trial.config}. Start it with keras.Input.")
        return model

    def _model_bytes(self, trial) -> int:
        """Estimated device bytes of ``trial``'s model: built once per configuration, then dropped."""
        key = repr(sorted(trial.config.items()))
        if key not in self._bytes:
            self._bytes[key] = model_bytes(self._build(trial), self._batch_size(trial))
            gc.collect()  # Keras models hold reference cycles: free this one's variables now
        return self._bytes[key]

    def _run_rung(self, rung, rung_no, bar):
        trials = rung.trials
        memory = [self._model_bytes(t) for t in trials]
        groups = pack_opt([t.config for t in trials], self.search_space, memory, strategy=self.packing,
                          capacity=self.memory_capacity, threshold=self.distance_threshold,
                          group_size=self.group_size, max_group=self.max_group, key=self.batch_size_key,
                          seed=self.seed + rung_no)
        self.groups_.append({"bracket": rung.bracket, "rung": rung.index, "epochs": rung.epochs,
                             "sizes": sorted((len(g) for g in groups), reverse=True)})
        scores, killed = {}, set()
        for group in groups:
            self._train_group([trials[i] for i in group], rung.epochs, scores, killed, bar)
        return scores, killed

    def _train_group(self, trials, epochs, scores, killed, bar):
        """Train ``trials`` as one pack to ``epochs``; on OOM, split and retry each half."""
        try:
            self._fit_pack(trials, epochs, scores, killed)
        except tf.errors.ResourceExhaustedError as e:
            halves = split_group(list(range(len(trials))))  # raises for a single trial
            self.oom_splits_ += 1
            log.warning("pack of %d trials ran out of memory (%s); splitting it into %s and retrying from "
                        "the rung's checkpoints", len(trials), str(e).splitlines()[0][:120],
                        [len(h) for h in halves])
            for trial in trials:
                scores.pop(trial.trial_id, None)
                killed.discard(trial.trial_id)
            for half in halves:
                self._train_group([trials[i] for i in half], epochs, scores, killed, bar)
            return
        bar.update(sum(epochs - t.epochs_done for t in trials))

    def _fit_pack(self, trials, epochs, scores, killed):
        """Build the group's models, train them as one pack, keep their checkpoints, drop the models."""
        (x, y), (xv, yv) = self._data, self._val
        pack = PackedModel([])
        by_name = {}
        for trial in trials:
            name = f"t{trial.trial_id}"
            by_name[name] = trial
            self._curves.setdefault(trial.trial_id, [])
            pack.add(Member(name, self._build(trial), self._batch_size(trial), epochs - trial.epochs_done),
                     self._ckpts.get(trial.trial_id))

        def on_step(packed, plan):
            due = [n for n in plan.epoch_ends if self.early_kill is not None or n in plan.finished]
            if not due:
                return
            for name, result in packed.evaluate(xv, yv, names=due).items():
                trial = by_name[name]
                score = self._score(result)
                self._curves[trial.trial_id].append(score)
                scores[trial.trial_id] = score
                if self.early_kill is not None and self.early_kill.should_kill(self._curves[trial.trial_id]):
                    killed.add(trial.trial_id)  # never promoted; freed now if its rung is not over
                    if name not in plan.finished:
                        packed.free(name)
                    log.info("early kill: trial %d at %s=%.4f after %d epochs", trial.trial_id, self._metric,
                             score, len(self._curves[trial.trial_id]))

        pack.fit(x, y, shuffle=True, seed=self.seed, on_step=on_step, verbose=0)
        for name in list(pack.members):
            self._ckpts[by_name[name].trial_id] = pack.free(name)
        del pack
        gc.collect()  # the group's models go before the next group's are built

    def _score(self, result: dict) -> float:
        if self._metric not in result:
            raise ValueError(f"objective {self.objective!r} needs the metric {self._metric!r}, but the model "
                             f"reports {sorted(result)}. Compile it in build_fn with metrics=[{self._metric!r}].")
        return float(result[self._metric])

    def _best_trial(self):
        """The best trial trained to R epochs; the oracle's best so far when none completed."""
        completed = [t for t in self.oracle_.trials_.values() if t.status == "completed"]
        if not completed:
            return self.oracle_.best_trial()
        sign = -1 if self.oracle_.mode == "max" else 1
        return min(completed, key=lambda t: (sign * t.score, t.trial_id))

    # -- results --------------------------------------------------------------------------
    def results(self) -> list:
        """One row per trial: id, bracket, configuration, epochs trained, latest score and status."""
        rows = []
        for t in self.oracle_.trials_.values():
            rows.append({"trial": t.trial_id, "bracket": t.bracket, **t.config, "epochs": t.epochs_done,
                         self.objective: t.score, "status": t.status})
        mode = self.oracle_.mode
        return sorted(rows, key=lambda r: (r[self.objective] is None,
                                           -(r[self.objective] or 0) if mode == "max" else (r[self.objective] or 0),
                                           r["trial"]))

    def results_table(self, top: int | None = 10) -> str:
        """The best ``top`` trials as a Markdown table."""
        rows = self.results()[:top]
        if not rows:
            return "(no trials)"
        headers = list(rows[0])
        fmt = lambda v: f"{v:.4g}" if isinstance(v, float) else str(v)
        lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(fmt(r[h]) for h in headers) + " |" for r in rows]
        return "\n".join(lines)

    def print_results(self, top: int | None = 10) -> None:
        """Print :meth:`results_table` with the search time and best score."""
        print(f"pack-aware Hyperband ({self.packing}): {self.search_time_:.1f} s, best {self.objective} "
              f"{self.best_score_}")
        print(self.results_table(top))

    def best_model(self):
        """The best trial's model with its trained weights and optimizer state."""
        from .checkpoint import load

        best = self._best_trial()
        if best is None or best.trial_id not in self._ckpts:
            raise RuntimeError("no completed trial to return. Run search() first, with early_kill off or a "
                               "lower kill threshold if every trial was killed.")
        return load(self._build(best), checkpoint=self._ckpts[best.trial_id])
