"""Rotary-DLT's arbiter: Keras training jobs with completion criteria share one device, epoch by epoch.

Every round the arbiter admits the jobs that have arrived, computes each active job's progress
(:mod:`.progress`), memory (:class:`.estimators.MemoryEstimator`) and predicted remaining time, asks the
policy for an order (:mod:`.policies`) and trains the chosen jobs for one epoch: one after another or,
with ``pack=True``, as one pack (:func:`tf_packing.pack`), which the thesis could not do. Jobs it does not
choose are checkpointed off the device (:func:`tf_packing.free`: weights and optimizer state) and
resumed exactly where they stopped (:func:`tf_packing.load`). After each epoch the job's validation
accuracy decides its criterion (:mod:`spark_plugin.shared.criteria`; elapsed time counts from arrival, so
waiting counts too); a job whose budget runs out while it waits leaves unattained. Finished jobs go to the
history repository (:class:`.history.History`), which the estimators of later, similar jobs read.

The clock and the sleep are injected, so a test can run a workload at the times it sets.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from spark_plugin.arguments import number, whole_number
from spark_plugin.errors import UsageError
from spark_plugin.shared import criteria as crit

from ..repack import batch_size_of, free, load, model_bytes
from . import policies
from .estimators import MemoryEstimator, epoch_seconds
from .history import History, JobRecord
from .progress import epochs_needed, progress, reachable

log = logging.getLogger(__name__)


@dataclass
class DltJob:
    """One training job: a function that builds its compiled Keras model, and when it is done.

    Parameters
    ----------
    name : str
    build : callable
        ``build()`` returns a built, compiled Keras model with an ``accuracy`` metric
        (``metrics=["accuracy"]``): the arbiter reads ``val_accuracy`` after every epoch. A model
        without one is refused when the job arrives, before it trains.
    criterion : str or Criterion
        ``UNTIL ACC >= 0.9 WITHIN 60 SECONDS``, ``UNTIL CONVERGE(ACC, 0.005) WITHIN 30 EPOCHS``,
        ``RUN FOR 10 EPOCHS`` (:func:`spark_plugin.shared.criteria.parse`).

    Every argument is checked here, each refused in one line naming the job
    (:class:`~spark_plugin.errors.UsageError`; a malformed criterion text
    :class:`~spark_plugin.shared.criteria.CriterionError`).
    kind : str, optional
        What makes jobs similar for the history (same architecture family, same data). Default: ``name``.
    batch_size : int, default=32
    arrival_s : float, default=0.0
        Seconds after the arbiter starts.
    seed : int, optional
        Draws each epoch's shuffling from ``(seed, epoch)`` (Keras's global seed is set before each of the
        job's epochs), so the job trains the same whichever jobs ran before it; comparing policies needs
        this. Default: Keras's global random state as the other jobs left it.
    """

    name: str
    build: Callable
    criterion: str | crit.Criterion
    kind: str | None = None
    batch_size: int = 32
    arrival_s: float = 0.0
    seed: int | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise UsageError(f"DltJob's name must be a non-empty string. Got {self.name!r}. Pass e.g. 'mlp-a'.")
        job = f"DltJob {self.name!r}"
        if not callable(self.build):
            raise UsageError(f"{job}: build must be a function returning a compiled Keras model. Got "
                             f"{self.build!r}. Pass e.g. lambda: make_model().")
        if isinstance(self.criterion, str):
            try:
                self.criterion = crit.parse(self.criterion)
            except crit.CriterionError as e:
                raise crit.CriterionError(f"{job}: {e}") from None
        elif not isinstance(self.criterion, crit.Criterion):
            raise UsageError(f"{job} needs a completion criterion. Got {self.criterion!r}. Pass e.g. "
                             "'RUN FOR 10 EPOCHS' or 'UNTIL ACC >= 0.9 WITHIN 60 SECONDS'.")
        if self.kind is not None and not isinstance(self.kind, str):
            raise UsageError(f"{job}: kind must be a string or None. Got {self.kind!r}. Pass e.g. 'mlp'.")
        self.kind = self.kind or self.name
        batch_size_of(self.batch_size, what=f"{job}'s batch_size")
        number(self.arrival_s, what=f"{job}'s arrival_s", low=0, fix="Pass seconds after the arbiter starts, e.g. 0.")
        if self.seed is not None:
            whole_number(self.seed, what=f"{job}'s seed", low=0, high=2**32 - 1, fix="Pass e.g. 0, or None.")


@dataclass
class _Active:
    job: DltJob
    model: object
    static_bytes: float
    accuracies: list = field(default_factory=list)
    epoch_s: list = field(default_factory=list)
    epoch_end_s: list = field(default_factory=list)  # on the arbiter's clock
    checkpoint: object = None  # off the device while set
    estimated_at: tuple | None = None  # (epochs trained, similar past jobs) when `estimate` was made
    estimate: tuple = ()  # (epochs needed, memory)
    status: str = crit.RUNNING
    finished_s: float | None = None


class DltArbiter:
    """Runs a workload of :class:`DltJob` on one device under a Rotary-DLT policy.

    Parameters
    ----------
    x, y : arrays
        Training data every job shares (packing needs the same inputs).
    validation_data : tuple
        ``(x_val, y_val)``, evaluated after every epoch.
    policy : str, default="rotary-dlt"
        One of :data:`.policies.POLICIES`.
    threshold : float, default=0.5
        Rotary-DLT's T.
    memory_bytes : float, default=inf
        The device memory the chosen jobs' estimates must fit in (> 0).
    pack : bool, default=False
        Train the chosen jobs of a round as one pack (at most ``max_pack``).
    max_pack : int, default=4
        The most jobs of a pack, 1 to :data:`tf_packing.repack.MAX_PACK`.
    history : History, optional
        Past jobs for the estimators; finished jobs are added to it.
    clock, sleep : callables
        Seconds, and a sleep of that many seconds (tests inject both).

    Attributes
    ----------
    rounds_ : list of dict
        Per round: ``time``, the ``chosen`` jobs, ``train_s``.
    """

    def __init__(self, x, y, validation_data, *, policy: str = "rotary-dlt", threshold: float = 0.5,
                 memory_bytes: float = float("inf"), pack: bool = False, max_pack: int = 4,
                 history: History | None = None, clock: Callable = time.monotonic, sleep: Callable = time.sleep):
        if policy not in policies.POLICIES:
            raise UsageError(f"DltArbiter's policy must be one of {', '.join(policies.POLICIES)}. Got {policy!r}.")
        threshold = policies.threshold_of(threshold, what="DltArbiter's threshold (T)")
        max_pack = policies.max_pack_of(max_pack, what="DltArbiter's max_pack")
        if memory_bytes != math.inf:
            memory_bytes = number(memory_bytes, what="DltArbiter's memory_bytes", low=0, low_open=True,
                                  fix="Pass the device's bytes, or leave the default (unlimited).")
        self.x, self.y, self.validation_data = x, y, validation_data
        self.policy, self.threshold = policy, threshold
        self.memory_bytes, self.pack, self.max_pack = memory_bytes, pack, max_pack if pack else 1
        self.history = history if history is not None else History()
        self.memory = MemoryEstimator()
        self.clock, self.sleep = clock, sleep

    def run(self, jobs: list[DltJob]) -> list[dict]:
        """Run ``jobs`` until each is attained or not; one result per job, in the order given."""
        names = [j.name for j in jobs]
        if len(set(names)) != len(names):
            raise ValueError(f"job names must be unique; got {names}")
        self.rounds_ = []
        start = self.clock()
        waiting = sorted(jobs, key=lambda j: j.arrival_s)
        device = _PackedDevice(self) if self.pack else _Device(self)
        active: dict[str, _Active] = {}
        done: dict[str, _Active] = {}
        while waiting or active:
            now = self.clock() - start
            while waiting and waiting[0].arrival_s <= now:
                job = waiting.pop(0)
                model = _built(job)
                active[job.name] = _Active(job, model, float(model_bytes(model, job.batch_size)))
            for name in [n for n, a in active.items() if self._status(a, now) != crit.RUNNING]:
                done[name] = self._finish(active.pop(name), now, device)
            if not active:
                if waiting:
                    self.sleep(max(waiting[0].arrival_s - (self.clock() - start), 0.0))
                continue
            views = [self._view(a, now) for a in active.values()]
            chosen = policies.choose(policies.order(self.policy, views, self.threshold), self.memory_bytes,
                                     max_pack=self.max_pack)
            if not chosen:
                raise ValueError(f"no active job fits in memory_bytes={self.memory_bytes:g}: the smallest needs "
                                 f"{min(v.memory for v in views):g} bytes. Raise memory_bytes.")
            for name, a in active.items():
                if name not in chosen:
                    device.evict(a)
            trained = device.train([active[n] for n in chosen])
            self.rounds_.append({"time": now, "chosen": chosen, "train_s": trained})
            now = self.clock() - start
            for name in chosen:
                a = active[name]
                a.epoch_end_s.append(now)
                if self._status(a, now) != crit.RUNNING:
                    done[name] = self._finish(active.pop(name), now, device)
        return [self._result(done[n]) for n in names]

    def _view(self, a: _Active, now: float) -> policies.DltView:
        past = self.history.similar(a.job.kind)
        per_epoch = epoch_seconds(a.epoch_s, past)
        needed, memory = self._estimate(a, past)
        deadline = a.job.criterion.deadline_s
        elapsed = now - a.job.arrival_s
        return policies.DltView(
            job_id=a.job.name, arrival_s=a.job.arrival_s,
            deadline_s=None if deadline is None else a.job.arrival_s + deadline,
            progress=progress(a.job.criterion, len(a.accuracies), elapsed, needed, per_epoch),
            epochs=len(a.accuracies), memory=memory,
            remaining_s=None if needed is None or per_epoch is None else needed * per_epoch,
            reachable=reachable(a.job.criterion, len(a.accuracies), elapsed, needed, per_epoch),
            criterion=a.job.criterion)

    def _estimate(self, a: _Active, past: list[JobRecord]) -> tuple[float | None, float]:
        """The epochs the job still needs and its memory, estimated again only when it has trained an epoch or a
        similar job has finished since: every round asks for every active job, and fitting its accuracy curve
        anew each time would cost the device more than the thesis's "imperceptible" overhead."""
        key = (len(a.accuracies), len(past))
        if a.estimated_at != key:
            a.estimated_at, a.estimate = key, (epochs_needed(a.job.criterion, a.accuracies, past),
                                               self.memory.estimate(a.job.batch_size, past, a.static_bytes))
        return a.estimate

    @staticmethod
    def _status(a: _Active, now: float) -> str:
        acc = a.accuracies
        return a.job.criterion.status(crit.Progress(
            elapsed_s=now - a.job.arrival_s, epochs=len(acc), estimate=acc[-1] if acc else 0.0,
            previous=acc[-2] if len(acc) > 1 else None))

    def _finish(self, a: _Active, now: float, device) -> _Active:
        device.evict(a)
        a.status, a.finished_s = self._status(a, now), now
        if a.accuracies:
            self.history.add(JobRecord(a.job.kind, a.job.batch_size, a.static_bytes, list(a.accuracies),
                                       list(a.epoch_s)))
        log.info("Rotary-DLT job %s %s after %d epochs, at %.1f s", a.job.name, a.status, len(a.accuracies), now)
        return a

    @staticmethod
    def _result(a: _Active) -> dict:
        return {"job": a.job.name, "kind": a.job.kind, "criterion": str(a.job.criterion), "status": a.status,
                "arrival_s": a.job.arrival_s, "finished_s": a.finished_s, "epochs": len(a.accuracies),
                "accuracy": a.accuracies[-1] if a.accuracies else None, "accuracies": list(a.accuracies),
                "epoch_end_s": list(a.epoch_end_s)}


def _built(job: DltJob):
    """``job``'s model, refused in one line before it trains when it logs no ``accuracy`` (what the criteria read)."""
    model = job.build()
    config = model.get_compile_config() if hasattr(model, "get_compile_config") else None
    if config is None:
        raise UsageError(f"DltJob {job.name!r}: build() returned {type(model).__name__}, not a compiled Keras "
                         "model. Return one compiled with metrics=['accuracy'].")
    if "accuracy" not in _metric_names(config.get("metrics")):
        raise UsageError(f"DltJob {job.name!r}: its model logs no 'accuracy' metric, which the arbiter reads after "
                         "every epoch (val_accuracy) to decide its criterion. Compile it with metrics=['accuracy'].")
    return model


def _metric_names(metrics) -> list[str]:
    """The names of the metrics a compile config lists (strings, serialized metrics, per output)."""
    if isinstance(metrics, str):
        return [metrics]
    if isinstance(metrics, dict) and "class_name" in metrics:  # one serialized metric object
        return [metrics.get("config", {}).get("name")]
    if isinstance(metrics, dict):
        metrics = list(metrics.values())
    return [name for m in metrics or () for name in _metric_names(m)]


def _seed_epoch(chosen: list[_Active]) -> None:
    """Seed Keras for the next epoch from the chosen jobs' seeds and epochs (a pack: all of them), when every
    one has a seed (:attr:`DltJob.seed`)."""
    if chosen and all(a.job.seed is not None for a in chosen):
        import keras
        import numpy as np

        entropy = [v for a in chosen for v in (a.job.seed, len(a.accuracies))]
        keras.utils.set_random_seed(int(np.random.SeedSequence(entropy).generate_state(1)[0]))


class _Device:
    """The device, one job at a time: a job is loaded (its checkpoint restored) to train and freed off it
    (weights and optimizer state copied to the host) when another is chosen."""

    def __init__(self, arbiter: DltArbiter):
        self.arbiter = arbiter
        self.placed: set[str] = set()

    def evict(self, a: _Active) -> None:
        if a.job.name in self.placed:
            a.checkpoint = free(a.model)
            self.placed.discard(a.job.name)

    def train(self, chosen: list[_Active]) -> float:
        """One epoch for each chosen job, one after another; records each one's accuracy and epoch time."""
        arbiter, started = self.arbiter, self.arbiter.clock()
        for a in chosen:
            if a.job.name not in self.placed:
                load(a.model, checkpoint=a.checkpoint)
                a.checkpoint = None
                self.placed.add(a.job.name)
            _seed_epoch([a])
            began = arbiter.clock()
            logs = a.model.fit(arbiter.x, arbiter.y, batch_size=a.job.batch_size, epochs=1, verbose=0,
                               validation_data=arbiter.validation_data)
            a.accuracies.append(float(logs.history["val_accuracy"][-1]))
            a.epoch_s.append(arbiter.clock() - began)
        return arbiter.clock() - started


class _PackedDevice(_Device):
    """The device as one pack that lives across rounds (Repack's ``add`` and ``free``): the jobs chosen
    join it, the others leave it, and a round whose members are those of an earlier round reuses that
    round's traced step instead of building a pack anew."""

    def __init__(self, arbiter: DltArbiter):
        super().__init__(arbiter)
        self.pack = None

    def evict(self, a: _Active) -> None:
        if self.pack is not None and a.job.name in self.pack.members:
            a.checkpoint = self.pack.free(a.job.name)

    def train(self, chosen: list[_Active]) -> float:
        from ..repack import PackedModel

        arbiter, started = self.arbiter, self.arbiter.clock()
        if self.pack is None:
            self.pack = PackedModel([])
        for a in chosen:
            if a.job.name not in self.pack.members:
                self.pack.load(a.model, batch_size=a.job.batch_size, name=a.job.name, checkpoint=a.checkpoint)
                a.checkpoint = None
        _seed_epoch(chosen)
        logs = self.pack.fit(arbiter.x, arbiter.y, validation_data=arbiter.validation_data, verbose=0)
        seconds = arbiter.clock() - started
        for a in chosen:
            a.accuracies.append(float(logs[a.job.name].history["val_accuracy"][-1]))
            a.epoch_s.append(seconds / len(chosen))
        return seconds
