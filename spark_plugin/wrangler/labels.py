"""Which tasks straggled: the thesis's Definition 3.1 on Spark task records.

A task straggles iff its normalized duration (duration per byte it moved) exceeds
``beta`` times the median of its peers (spec §2). Deviations, flagged as such in
spec §10: peers are the task's *stage attempt* by default (Spark jobs mix unlike
stages; ``scope="job"`` is the thesis's choice), and tasks that moved no bytes are
compared by plain duration with the other zero-byte tasks of their scope, since
their normalized duration is undefined. Only successful attempts are labelled;
failed and killed attempts have no comparable duration.

Examples
--------
>>> import pandas as pd
>>> tasks = pd.DataFrame({"stageId": [1, 1, 1], "stageAttempt": 0, "jobId": 0, "status": "SUCCESS",
...                       "durationMs": [100, 110, 200], "inputBytes": 1000})
>>> label_tasks(tasks)["straggler"].tolist()
[False, False, True]
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..arguments import by_key

#: Task-record byte columns summed into "work done" (spec §11.1).
BYTE_COLUMNS = ("inputBytes", "shuffleLocalBytes", "shuffleRemoteBytes", "outputBytes", "shuffleWriteBytes")
SCOPES = {"stage": ["stageId", "stageAttempt"], "job": ["jobId"]}


def bytes_moved(tasks: pd.DataFrame) -> pd.Series:
    """Bytes read plus written by each task (columns missing from ``tasks`` count as 0)."""
    total = pd.Series(0, index=tasks.index, dtype="int64")
    for column in BYTE_COLUMNS:
        if column in tasks:
            total = total + tasks[column].fillna(0).astype("int64")
    return total


def label_tasks(tasks: pd.DataFrame, *, beta: float = 1.3, scope: str = "stage") -> pd.DataFrame:
    """Label the successful tasks of ``tasks``.

    Parameters
    ----------
    tasks : pandas.DataFrame
        Telemetry task records (``durationMs``, ``status``, the scope's id columns
        and any of :data:`BYTE_COLUMNS`).
    beta : float, default=1.3
        Straggler threshold, checked by ``spark.wrangler.beta``'s rule (> 1).
    scope : {"stage", "job"}, default="stage"
        Which tasks form the median a task is compared with (``spark.wrangler.scope``'s rule).

    Returns
    -------
    pandas.DataFrame
        The successful tasks with ``bytes``, ``nd`` (duration per byte, or the
        duration for zero-byte tasks) and boolean ``straggler`` columns added.

    Raises
    ------
    UsageError
        If ``beta`` or ``scope`` breaks its key's rule.
    """
    beta = by_key("spark.wrangler.beta", beta, what="beta")
    scope = by_key("spark.wrangler.scope", scope, what="scope")
    out = tasks[tasks["status"] == "SUCCESS"].copy()
    out["bytes"] = bytes_moved(out)
    moved = out["bytes"] > 0
    out["nd"] = np.where(moved, out["durationMs"] / out["bytes"].where(moved, 1), out["durationMs"]).astype(float)
    peers = out.groupby(SCOPES[scope] + [moved])["nd"].transform("median")
    out["straggler"] = out["nd"] > beta * peers
    return out
