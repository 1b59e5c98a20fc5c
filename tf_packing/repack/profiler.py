"""Repack's profiling metrics: T_s(Seq), T_s(Pack), IMPV, peak device memory and SwOH (spec 4).

* ``T_s(Seq) = sum_i T_s(Model i)``: each model's step time trained alone (Eq. 2.1).
* ``T_s(Pack)``: the step time of the packed model (Eq. 2.2).
* ``IMPV = (T_s(Seq) - T_s(Pack)) / T_s(Seq)`` (Eq. 2.3): positive when packing helps.
* peak allocated device memory, per model alone and for the pack (GPU only;
  TensorFlow keeps no allocator statistics for the CPU).
* ``SwOH(n) = T_e(Seq) - sum_i T_e(Model i)`` (Eq. 2.4): one run that trains the
  models one after another, loads and frees included, minus their epochs alone.

As in the thesis, the first step of every run is dropped (tracing, warm-up),
loading is timed apart from stepping, and each figure is taken over ``repeats``
runs, here as the median; baseline and packed runs alternate within a repeat.
"""

from __future__ import annotations

import logging
import statistics
import time
from dataclasses import asdict, dataclass, field

import tensorflow as tf

from .batching import steps_per_epoch
from .packed import Member, PackedModel

__all__ = ["PackProfile", "impv", "peak_memory", "profile", "switching_overhead"]

log = logging.getLogger(__name__)

_FOREVER = 10**6  # epochs: members must not finish while being timed


def impv(t_seq: float, t_pack: float) -> float:
    """``(T_s(Seq) - T_s(Pack)) / T_s(Seq)``."""
    return (t_seq - t_pack) / t_seq


def _gpu():
    gpus = tf.config.list_logical_devices("GPU")
    return gpus[0].name.replace("/device:", "") if gpus else None


def peak_memory(run) -> int | None:
    """Peak bytes allocated on the first GPU while ``run()`` executes; None on a CPU-only machine."""
    gpu = _gpu()
    if gpu is None:
        run()
        return None
    tf.config.experimental.reset_memory_stats(gpu)
    run()
    return int(tf.config.experimental.get_memory_info(gpu)["peak"])


@dataclass
class PackProfile:
    """Timings of one set of models, alone and packed (seconds; medians over repeats).

    Attributes
    ----------
    t_models : list of float
        ``T_s(Model i)`` for each model.
    t_pack : dict of str to float
        ``T_s(Pack)`` of the pack (key ``"packed"``).
    raw : dict
        Every repeat's step times, for the record.
    peak_bytes : dict
        Peak GPU bytes per model alone (``"models"``) and per variant; None on CPU.
    """

    n_models: int
    batch_sizes: list
    steps: int
    repeats: int
    t_models: list
    t_pack: dict
    raw: dict = field(default_factory=dict)
    peak_bytes: dict = field(default_factory=dict)

    @property
    def t_seq_keras(self) -> float | None:
        """``T_s(Seq)`` with each model stepped by Keras's ``model.fit`` (None when not measured)."""
        per_model = self.raw.get("keras_fit")
        return sum(statistics.median(r) for r in per_model) if per_model else None

    @property
    def t_seq(self) -> float:
        """``T_s(Seq)``: the sum of the models' step times alone."""
        return sum(self.t_models)

    def impv(self, variant: str = "packed") -> float:
        """IMPV of ``variant`` against sequential training."""
        return impv(self.t_seq, self.t_pack[variant])

    def to_dict(self) -> dict:
        out = asdict(self)
        out["t_seq"] = self.t_seq
        out["t_seq_keras"] = self.t_seq_keras
        out["impv"] = {v: self.impv(v) for v in self.t_pack}
        return out


def _timed_steps(pack: PackedModel, x, y, steps: int) -> list:
    """Step times of ``steps`` more steps of ``pack`` (its first step ever is dropped by the caller)."""
    before = len(pack.step_times_)
    pack.fit(x, y, max_steps=steps, shuffle=False, verbose=0)
    return pack.step_times_[before:]


def _median_step(times: list) -> float:
    return statistics.median(times)


def profile(build_fn, n_models: int, x, y, *, batch_sizes=32, steps: int = 20, repeats: int = 5,
            preprocess=None, keras_baseline: bool = False) -> PackProfile:
    """Measure ``T_s(Model i)``, ``T_s(Pack)`` per variant, and peak GPU memory.

    Parameters
    ----------
    build_fn : callable
        ``build_fn(i) -> keras.Model``, compiled: the i-th model.
    n_models : int
        How many models to pack.
    x, y : array-like
        Shared training data.
    batch_sizes : int or list of int, default=32
    steps : int, default=20
        Timed steps per run (after one dropped warm-up step).
    repeats : int, default=5
        Runs per figure (the thesis averages 5); the median is reported.
    preprocess : callable, optional
        Shared preprocessing, run once per step in a pack and once per model
        step when sequential.
    keras_baseline : bool, default=False
        Also time each model trained alone by Keras's own ``model.fit`` (in
        ``raw["keras_fit"]``; one fit call of at least 50 steps per repeat, its
        epoch set-up included).

    Returns
    -------
    PackProfile
    """
    sizes = batch_sizes if isinstance(batch_sizes, (list, tuple)) else [batch_sizes] * n_models
    if len(sizes) != n_models:
        raise ValueError(f"batch_sizes has {len(sizes)} entries for n_models={n_models}. Pass one per model.")
    alone = [PackedModel([Member(f"m{i}", build_fn(i), sizes[i], _FOREVER)], preprocess=preprocess)
             for i in range(n_models)]
    packs = {"packed": PackedModel([Member(f"m{i}", build_fn(i), sizes[i], _FOREVER) for i in range(n_models)],
                                   preprocess=preprocess)}
    peaks = {"models": [peak_memory(lambda p=p: _timed_steps(p, x, y, 1)) for p in alone]}
    for name, pack in packs.items():
        peaks[name] = peak_memory(lambda p=pack: _timed_steps(p, x, y, 1))  # also the dropped warm-up step
    raw = {"models": [[] for _ in alone], **{name: [] for name in packs}}
    keras_models = [build_fn(i) for i in range(n_models)] if keras_baseline else []
    if keras_baseline:
        raw["keras_fit"] = [[] for _ in keras_models]
        for model, b in zip(keras_models, sizes):
            _keras_step(model, x, y, b, 1)  # warm-up: traces Keras's own train function
    for rep in range(repeats):
        order = ["seq", *packs] if rep % 2 == 0 else [*packs, "seq"]  # interleave baseline and treatment
        for what in order:
            if what == "seq":
                for i, p in enumerate(alone):
                    raw["models"][i].append(_median_step(_timed_steps(p, x, y, steps)))
                for i, (model, b) in enumerate(zip(keras_models, sizes)):
                    raw["keras_fit"][i].append(_keras_step(model, x, y, b, steps))
            else:
                raw[what].append(_median_step(_timed_steps(packs[what], x, y, steps)))
    result = PackProfile(n_models, list(sizes), steps, repeats,
                         [statistics.median(r) for r in raw["models"]],
                         {name: statistics.median(raw[name]) for name in packs}, raw, peaks)
    log.info("profile n=%d: T_s(Seq)=%.4fs %s", n_models, result.t_seq,
             {k: f"{v:.4f}s IMPV {result.impv(k):+.2f}" for k, v in result.t_pack.items()})
    return result


def _keras_step(model, x, y, batch_size: int, steps: int) -> float:
    """Seconds per step of Keras's own ``model.fit``: one epoch of at least 50 batches, set-up included."""
    steps = min(max(steps, 50), -(-len(x) // batch_size))
    rows = slice(0, batch_size * steps)
    start = time.perf_counter()
    model.fit(x[rows], y[rows], batch_size=batch_size, epochs=1, shuffle=False, verbose=0)
    return (time.perf_counter() - start) / steps


def switching_overhead(build_fn, n_models: int, x, y, *, batch_size: int = 32) -> dict:
    """``SwOH(n) = T_e(Seq) - sum_i T_e(Model i)`` for one epoch of each model.

    ``T_e(Seq)`` is one run training the models one after another through the
    pack's queue (each loaded when the previous is freed, re-tracing included);
    ``T_e(Model i)`` is the epoch of model i alone, timed over its steps, with a
    warm-up epoch of its own first so its tracing is excluded.

    Returns
    -------
    dict
        ``{"t_e_seq": s, "t_e_models": [s, ...], "swoh": s, "swoh_share": SwOH / T_e(Seq)}``.
    """
    t_models = []
    for i in range(n_models):
        pack = PackedModel([Member(f"m{i}", build_fn(i), batch_size, 2)])
        pack.fit(x, y, max_steps=steps_per_epoch(len(x), batch_size), verbose=0)  # warm-up epoch, tracing included
        start = time.perf_counter()
        pack.fit(x, y, verbose=0)
        t_models.append(time.perf_counter() - start)
    # the sequential run: fresh models, first traced too (as the alone runs were), then queued
    queue = [Member(f"q{i}", build_fn(i), batch_size, 1) for i in range(n_models)]
    first = PackedModel([Member("warm", build_fn(0), batch_size, 1)])
    first.fit(x, y, max_steps=1, verbose=0)
    first.free("warm")
    start = time.perf_counter()
    first.fit(x, y, queue=queue, verbose=0)
    t_seq = time.perf_counter() - start
    swoh = t_seq - sum(t_models)
    return {"t_e_seq": t_seq, "t_e_models": t_models, "swoh": swoh, "swoh_share": swoh / t_seq}
