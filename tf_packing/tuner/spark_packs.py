"""A rung's packs as Spark tasks: one pack per task slot, on the cluster's own executors (and GPUs).

``Tuner(..., spark=spark)`` hands each rung's groups to :class:`SparkPacks`. One
Spark job per rung has one task per pack; Spark's scheduler places them on free
task slots (``spark.task.cpus`` cores each, and ``spark.task.resource.gpu.amount``
GPUs where executors discover GPUs), so a rung of more packs than slots queues as
any Spark stage does.

Everything a task needs that is not small travels through a folder every executor
reads (the tuner's ``directory``): the training data is written there once per
search as ``data.npz`` and each executor's Python worker reads it once; each
trial's checkpoint is a file named by the rung that wrote it, so the checkpoints a
rung starts from are never overwritten while it runs. A task lost with its
executor is retried by Spark from those same files and trains the same pack to the
same result, which is why a search survives losing executors. The driver reads
each finished pack's checkpoints back (for ``get_best_models`` and for resuming)
and deletes files no later rung reads.

In the task, TensorFlow gets as many threads as the task has cores (before its
runtime starts; a reused Python worker keeps the first setting), and a task given
a GPU trains on ``/GPU:<address>``.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pyspark import cloudpickle

from spark_plugin.ownership import FolderKind

from ..repack import read_checkpoint as read, save_checkpoint as save
from .scorekeeper import Scorekeeper, TargetReached

__all__ = ["EXECUTORS", "PackOrder", "PackOutcome", "SparkPacks"]

log = logging.getLogger(__name__)

#: The folder the executors read: the data, and the trials' checkpoint files under ``packs/``.
EXECUTORS = FolderKind("tf_packing executors' files", ("data.npz", "data.tmp.npz", "packs"))

#: The data each Python worker has read, by path and modification time (read once per worker).
_DATA: dict = {}
#: Whether this Python worker has already set TensorFlow's thread pools.
_THREADS_SET = False


@dataclass
class PackOrder:
    """One pack to train in a Spark task: what, from which checkpoint files, and where to write."""

    training: object  # PackTraining
    trials: list
    epochs: int
    inputs: dict  # trial id -> checkpoint file (absent: a fresh model)
    outputs: dict  # trial id -> checkpoint file to write
    data_path: str
    keeper: Scorekeeper
    wall_start: float  # time.time() at the search's start, for the keeper's clock
    deterministic: bool


@dataclass
class PackOutcome:
    """What a task sends back: the trials (their configurations may have grown), the keeper, the files written."""

    trials: list
    keeper: Scorekeeper
    written: dict  # trial id -> checkpoint file
    oom_splits: int
    space: object  # the space after building, with any conditional branch met
    executor: str


class SparkPacks:
    """Runs groups of trials as Spark tasks, data and checkpoints in ``folder`` (read by every executor).

    Parameters
    ----------
    spark : SparkSession or SparkContext
    folder : Path
        A folder every executor reads and writes (on one machine any local folder; on a cluster a shared
        file system): an :data:`EXECUTORS` folder, claimed when the data is shared and removed only while
        it holds nothing else.
    """

    def __init__(self, spark, folder):
        self.sc = getattr(spark, "sparkContext", spark)
        self.folder = Path(folder)
        self.files = self.folder / "packs"
        self.data_path = None
        self.shared = {}  # trial id -> the checkpoint file its next rung reads

    @property
    def slots(self) -> int:
        """Tasks the live executors run at once (cores and GPUs over what a task takes), as barrier stages count.

        Before any executor has registered: Spark's default parallelism over ``spark.task.cpus``.
        """
        context = self.sc._jsc.sc()
        live = context.maxNumConcurrentTasks(context.resourceProfileManager().defaultResourceProfile())
        if live > 0:
            return int(live)
        cpus = int(self.sc.getConf().get("spark.task.cpus", "1"))
        return max(1, self.sc.defaultParallelism // cpus)

    def share_data(self, data, validation) -> None:
        """Write the training and validation arrays once, where every executor reads them."""
        arrays = {}
        for key, value in (("x", data[0]), ("y", data[1])) + ((("xv", validation[0]), ("yv", validation[1]))
                                                               if validation is not None else ()):
            if value is None or not isinstance(value, np.ndarray):
                raise ValueError(f"Tuner(spark=...) ships the data to executors as NumPy arrays; search() got "
                                 f"{type(value).__name__} for {key}. Pass arrays (np.asarray(...)), or drop spark= to "
                                 "train in this process.")
            arrays[key] = value
        EXECUTORS.claim(self.folder)
        path = self.folder / "data.npz"
        tmp = self.folder / "data.tmp.npz"
        np.savez(tmp, **arrays)
        os.replace(tmp, path)
        self.data_path = str(path)

    def run(self, groups, epochs, training, keeper: Scorekeeper, checkpoints: dict, *, rung_no: int,
            wall_start: float, deterministic: bool, description: str) -> list[PackOutcome]:
        """Train every group as one task of one Spark job; return each task's outcome, in group order."""
        self.files.mkdir(parents=True, exist_ok=True)
        orders = []
        for trials in groups:
            inputs = {}
            for trial in trials:
                if trial.trial_id in checkpoints:
                    inputs[trial.trial_id] = self._shared_file(trial.trial_id, checkpoints[trial.trial_id])
            outputs = {t.trial_id: str(self.files / f"trial_{t.trial_id}.r{rung_no}.npz") for t in trials}
            orders.append(PackOrder(training, trials, epochs, inputs, outputs, self.data_path,
                                    keeper.for_task(trials, None), wall_start, deterministic))
        self.sc.setJobDescription(description)
        try:
            # Each order cloudpickled on its own, so each task receives its own pack only.
            for shipped in (training.build_fn, *training.callbacks):
                ship_module_by_value(shipped)
            pickled = [cloudpickle.dumps(order) for order in orders]
            outcomes = self.sc.parallelize(pickled, len(pickled)).map(_train_pickled).collect()
        finally:
            self.sc.setJobDescription(None)
        for outcome in outcomes:
            self.shared.update(outcome.written)
        return outcomes

    def read(self, outcome: PackOutcome) -> dict:
        """The checkpoints a task wrote, read back on the driver."""
        return {trial_id: read(path) for trial_id, path in outcome.written.items()}

    def keep_only(self, trial_ids) -> None:
        """Delete the checkpoint files of trials that will not train again."""
        keep = {self.shared[t] for t in trial_ids if t in self.shared}
        self.shared = {t: p for t, p in self.shared.items() if p in keep}
        for stale in self.files.glob("trial_*.npz"):
            if str(stale) not in keep:
                stale.unlink(missing_ok=True)

    def clear(self) -> None:
        """Delete the shared data and checkpoint files (the project folder keeps what a resumed search needs)."""
        EXECUTORS.remove(self.folder)
        self.data_path, self.shared = None, {}

    def _shared_file(self, trial_id: int, checkpoint) -> str:
        """The file a trial's checkpoint is read from; written now when no task wrote it (a resumed search)."""
        path = self.shared.get(trial_id)
        if path is None or not Path(path).exists():
            path = str(self.files / f"trial_{trial_id}.resumed.npz")
            save(checkpoint, path)
            self.shared[trial_id] = path
        return path


def ship_module_by_value(obj) -> None:
    """Send the code of ``obj``'s module with each task when the executors may not import it.

    A ``build_fn`` from the user's own module (not ``__main__``, whose functions always travel by value) would
    otherwise be pickled by name and fail on executors that lack the file (``No module named ...``) unless it
    was shipped with ``--py-files``. Modules installed in a ``site-packages`` folder are left to be imported.
    """
    target = getattr(obj, "func", obj)  # functools.partial
    target = getattr(target, "__func__", target)  # a bound method: its function
    name = getattr(target, "__module__", None) or type(target).__module__
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    if module is None or name == "__main__" or path is None or "site-packages" in Path(path).parts:
        return
    cloudpickle.register_pickle_by_value(module)


def _train_pickled(order: bytes) -> PackOutcome:
    return _train_order(cloudpickle.loads(order))


def _train_order(order: PackOrder) -> PackOutcome:
    """The Spark task: train one pack from its checkpoint files and write the trials' new ones."""
    from pyspark import TaskContext

    context = TaskContext.get()
    _set_threads(int(context.cpus()) if context is not None else 1)
    import tensorflow as tf

    if order.deterministic:
        tf.config.experimental.enable_op_determinism()
    gpus = (context.resources().get("gpu") if context is not None else None)
    device = f"/GPU:{gpus.addresses[0]}" if gpus is not None and gpus.addresses else None
    x, y, validation = _data(order.data_path)
    keeper = order.keeper
    keeper.clock = lambda: time.time() - order.wall_start
    checkpoints = {trial_id: read(path) for trial_id, path in order.inputs.items()}
    written, splits = {}, 0
    try:
        trained, splits = order.training.train(order.trials, order.epochs, checkpoints, (x, y), validation,
                                               keeper, device=device)
    except TargetReached:
        trained = {}  # the search ends here, as it does in the tuner's own process
    for trial_id, checkpoint in trained.items():
        save(checkpoint, order.outputs[trial_id])  # a retried or speculative attempt replaces it whole
        written[trial_id] = order.outputs[trial_id]
    keeper.clock = None  # a lambda over this task's state does not travel back
    return PackOutcome(order.trials, keeper, written, splits, order.training.space, executor_id())


def executor_process() -> tuple[str, int] | None:
    """``(executor id, JVM pid)`` of the executor this Python worker serves, or None outside one.

    PySpark tells a worker no executor id; the executor JVM, an ancestor of the worker, carries it on its
    command line as ``--executor-id`` (standalone, local-cluster, YARN and Kubernetes alike).
    """
    pid = os.getpid()
    for _ in range(4):
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"--executor-id" in args:
                return args[args.index(b"--executor-id") + 1].decode(), pid
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
    return None


def executor_id() -> str:
    """The id of the executor this Python worker serves; ``"?"`` outside one (or off Linux)."""
    found = executor_process()
    return found[0] if found else "?"


def _set_threads(cores: int) -> None:
    """TensorFlow's thread pools sized to the task's cores (only possible before its runtime starts)."""
    global _THREADS_SET
    if _THREADS_SET:
        return
    import tensorflow as tf

    try:
        tf.config.threading.set_intra_op_parallelism_threads(cores)
        tf.config.threading.set_inter_op_parallelism_threads(min(cores, 2))
    except RuntimeError:  # the runtime already started in this worker (another task's work)
        log.info("TensorFlow's thread pools were already set in this Python worker")
    _THREADS_SET = True


def _data(path: str):
    """``(x, y, validation)`` from the shared file, read once per Python worker per version of the file."""
    key = (path, os.stat(path).st_mtime_ns)
    if key not in _DATA:
        _DATA.clear()
        with np.load(path) as arrays:
            loaded = {k: arrays[k] for k in arrays.files}
        _DATA[key] = (loaded["x"], loaded["y"],
                      (loaded["xv"], loaded["yv"]) if "xv" in loaded else None)
    return _DATA[key]
