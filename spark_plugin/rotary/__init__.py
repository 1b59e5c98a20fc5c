"""Rotary-AQP: progressive (online-aggregation) TPC-H queries and, later, arbitration between them.

* :func:`progressive` / :class:`ProgressiveQuery`: run a query batch by batch, with an estimate and
  confidence intervals after each batch, checkpoint and resume;
* :mod:`.queries`: the progressive query specs (TPC-H ones ship in ``queries/``);
* :func:`prepare`: the batched copy of the fact tables.
"""

from .batches import BatchDataError, BatchedData, prepare
from .engine import ProgressiveQuery, Snapshot, progressive
from .spec import QuerySpec, QuerySpecError, available, load

__all__ = ["BatchDataError", "BatchedData", "ProgressiveQuery", "QuerySpec", "QuerySpecError", "Snapshot",
           "available", "load", "prepare", "progressive"]
