"""Training and test rows from telemetry: labelled tasks with their node snapshots.

One row per successful task: the features are its executor's counter sample at
launch (:mod:`.snapshots`), the label says whether it straggled (:mod:`.labels`),
``node`` is the executor id and ``workload`` the application's workload tag.
Rows are in launch order, so a split by position is a split in time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import SparkrmError
from .labels import label_tasks
from .snapshots import attach_snapshots, feature_columns


@dataclass
class Dataset:
    """Labelled rows in launch order.

    Attributes
    ----------
    X : numpy.ndarray of shape (n, d)
        Counter features (NaN where a counter is unavailable).
    y : numpy.ndarray of shape (n,)
        1 for stragglers, 0 otherwise.
    nodes, workloads : numpy.ndarray of shape (n,)
        Executor id and workload tag of each row.
    launch_times : numpy.ndarray of shape (n,)
        Task launch times, epoch milliseconds.
    features : list of str
        Column names of ``X``.
    """

    X: np.ndarray
    y: np.ndarray
    nodes: np.ndarray
    workloads: np.ndarray
    launch_times: np.ndarray
    features: list

    def __len__(self) -> int:
        return len(self.y)

    def split(self, fraction: float) -> tuple["Dataset", "Dataset"]:
        """The first ``fraction`` of rows in time, and the rest."""
        cut = int(round(len(self) * fraction))
        return self.take(slice(0, cut)), self.take(slice(cut, None))

    def take(self, rows) -> "Dataset":
        """The rows selected by a slice, index array or boolean mask."""
        return Dataset(self.X[rows], self.y[rows], self.nodes[rows], self.workloads[rows],
                       self.launch_times[rows], self.features)

    def select(self, features, *, model: str = "the model") -> "Dataset":
        """The same rows with the columns ``features``, in that order, matched by name.

        A model reads its counters by position, so rows recorded by another Spark or sparkrm version (a
        counter renamed, added or dropped) must be lined up by name first; counters the model never saw are
        left out, and counters it needs that the rows lack refuse the whole scoring instead of scoring the
        wrong columns.

        Raises
        ------
        SparkrmError
            Naming the missing counters, ``model`` and the fix.
        """
        index = {name: i for i, name in enumerate(self.features)}
        missing = [f for f in features if f not in index]
        if missing:
            raise SparkrmError(
                f"{model} reads counters this telemetry lacks: {', '.join(missing)}. Record the telemetry with the "
                f"same Spark and sparkrm versions as the model's training run, or retrain on this recording "
                f"(python -m spark_plugin.wrangler train ... --out <model>).")
        columns = [index[f] for f in features]
        return Dataset(self.X[:, columns], self.y, self.nodes, self.workloads, self.launch_times, list(features))


def build_dataset(tasks: pd.DataFrame, nodes: pd.DataFrame, *, beta: float = 1.3, scope: str = "stage",
                  workload: str = "default", max_age_ms: int) -> Dataset:
    """Label ``tasks``, attach their node samples and return the rows.

    Parameters
    ----------
    tasks, nodes : pandas.DataFrame
        Telemetry ``task`` and ``node`` records.
    beta, scope
        As in :func:`.labels.label_tasks`.
    workload : str, default="default"
        Workload tag of every row (one application runs one workload).
    max_age_ms : int
        Oldest usable sample before a task's launch, normally two sampling intervals.
    """
    labelled = label_tasks(tasks, beta=beta, scope=scope)
    rows = attach_snapshots(labelled, nodes, max_age_ms=max_age_ms)
    features = feature_columns(nodes)
    return Dataset(X=rows[features].to_numpy(dtype=float), y=rows["straggler"].to_numpy(dtype=int),
                   nodes=rows["executorId"].astype(str).to_numpy(),
                   workloads=np.full(len(rows), workload, dtype=object),
                   launch_times=rows["launchTime"].to_numpy(dtype="int64"), features=features)


def concat(datasets) -> Dataset:
    """Rows of several datasets with the same features, in launch order."""
    datasets = [d for d in datasets if len(d)]
    if not datasets:
        raise ValueError("No labelled rows: the telemetry holds no successful task with a node sample before "
                         "its launch. Record with the wrangler feature on (node samples) and run some jobs.")
    merged = Dataset(*(np.concatenate([getattr(d, f) for d in datasets])
                       for f in ("X", "y", "nodes", "workloads", "launch_times")), datasets[0].features)
    return merged.take(np.argsort(merged.launch_times, kind="stable"))
