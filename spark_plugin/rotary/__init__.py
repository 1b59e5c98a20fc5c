"""Rotary-AQP: progressive (online-aggregation) TPC-H queries and, later, arbitration between them.

* :func:`progressive` / :class:`ProgressiveQuery`: run a query batch by batch, with an estimate and
  confidence intervals after each batch, checkpoint and resume;
* :mod:`.queries`: the progressive query specs (TPC-H ones ship in ``queries/``);
* :func:`prepare`: the batched copy of the fact tables;
* :func:`progressive_query`: any plain aggregate query (SQL or DataFrame) over the user's own tables, its
  progressive form derived from Spark's analysis of it (``progressive(spark, sql)`` iterates over it);
  :func:`prepare_for`: the batch layouts those queries need, written once; :func:`convergence_plot`: a
  picture of a run's estimates and intervals over time.
"""

from .batches import BatchDataError, BatchedData, prepare
from .engine import ProgressiveQuery, Snapshot
from .frames import QueryError
from .layouts import prepare_for
from .plot import convergence_plot
from .spec import QuerySpec, QuerySpecError, available, load
from .sqlquery import progressive
from .sqlquery import query as progressive_query

__all__ = ["BatchDataError", "BatchedData", "ProgressiveQuery", "QueryError", "QuerySpec", "QuerySpecError",
           "Snapshot", "available", "convergence_plot", "load", "prepare", "prepare_for", "progressive",
           "progressive_query"]
