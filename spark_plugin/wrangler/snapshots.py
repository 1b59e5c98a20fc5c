"""Feature vectors: each task gets its node's latest counter sample taken at or before its launch.

The thesis uses the node's snapshot before the task starts (spec §3); any later
value would leak the outcome into the features. A sample is stamped with the end
of its interval, so "at or before launch" means it only describes the past. A
task whose newest sample is older than ``max_age_ms`` (a lost executor, a
stalled sampler) gets no features and is dropped.
"""

from __future__ import annotations

import pandas as pd

#: Columns of ``node`` records that identify a sample rather than describe the node.
META_COLUMNS = ("seq", "type", "executorId", "time", "intervalMs")


def feature_columns(nodes: pd.DataFrame) -> list[str]:
    """The counter columns of ``node`` records, in record order."""
    return [c for c in nodes.columns if c not in META_COLUMNS]


def attach_snapshots(tasks: pd.DataFrame, nodes: pd.DataFrame, *, max_age_ms: int) -> pd.DataFrame:
    """Join each task with its executor's latest sample with ``time <= launchTime``.

    Parameters
    ----------
    tasks : pandas.DataFrame
        Task records with ``executorId`` and ``launchTime``.
    nodes : pandas.DataFrame
        ``node`` records: ``executorId``, ``time`` and counter columns.
    max_age_ms : int
        Oldest usable sample, in milliseconds before launch.

    Returns
    -------
    pandas.DataFrame
        The tasks that have a usable sample, sorted by launch time, with the
        counter columns and ``sampleTime`` added.
    """
    features = feature_columns(nodes)
    right = (nodes[["executorId", "time", *features]].rename(columns={"time": "sampleTime"})
             .astype({"sampleTime": "int64"}).sort_values("sampleTime"))
    left = tasks.drop(columns=[c for c in features if c in tasks]).astype({"launchTime": "int64"})
    joined = pd.merge_asof(left.sort_values("launchTime"), right, left_on="launchTime", right_on="sampleTime",
                           by="executorId", direction="backward", tolerance=max_age_ms, allow_exact_matches=True)
    return joined[joined["sampleTime"].notna()].reset_index(drop=True)
