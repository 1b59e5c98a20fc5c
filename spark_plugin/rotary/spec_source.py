"""A hand-written progressive spec over batched TPC-H data: one source of a :class:`.engine.ProgressiveQuery`.

The spec's SQL (``queries/qNN.sql``) reads the sampled tables through temporary views that this source
points at a chunk of batches before each Spark query, and the other tables whole. Its static views (whole-
table subqueries a spec names) are cached once and shared between the queries open on the same data; the
last query to close lets them go.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pandas as pd

from .batches import BatchedData, prepare
from .frames import to_pandas
from .spec import QuerySpec, QuerySpecError, load

#: Cached static views in use, by (data folder, view SQL): how many open queries use each. Spark's cache is
#: keyed by plan, not by owner, so a view is uncached only when the last query using it closes.
_STATIC_USERS: dict[tuple[str, str], int] = {}
_STATIC_LOCK = threading.Lock()


class SpecSource:
    """TPC-H query ``query`` (a number or a spec path) over TPC-H folder ``data`` split into ``batches``."""

    def __init__(self, spark, query, data, batches: int = 20, seed: int = 0):
        self.spark = spark.newSession()  # its own temp views and SQL conf: jobs run side by side
        self.spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", "true")
        self.name = query  # a TPC-H number or a spec path, as given
        self.spec: QuerySpec = load(query)
        self.data: BatchedData = prepare(spark, Path(data).expanduser(), batches, seed, layouts=(self.spec.layout,))
        self._frames: dict | None = None  # the tables, read once
        self._statics: list = []  # this query's cached static views, while it holds them

    @property
    def batches(self) -> int:
        return self.data.batches

    def rows(self, batch_ids) -> pd.DataFrame:
        """The spec's SQL result over batches ``batch_ids`` (one Spark query)."""
        if self.spec.statics and not self._statics:
            self._show(range(self.batches))  # they see whole tables
            self._cache_statics()
        self._show(batch_ids)
        self._narrow_statics()
        return to_pandas(self.spark.sql(self.spec.sql))  # through Arrow: a chunk can hold 10^5 groups

    def read_attributes(self, wanted: pd.Index) -> pd.DataFrame:
        """The ``@attributes-from`` rows of keys ``wanted``, indexed by the keys (one Spark query, filtered on
        each key column so that Parquet skips what it can; a key without a row gets NULL attributes)."""
        from pyspark.sql import functions as F

        self._show(range(self.batches))  # whole tables
        frame = self.spark.sql(self.spec.attributes_sql)
        missing = [c for c in (*self.spec.keys, *self.spec.attributes) if c not in frame.columns]
        if missing:
            raise QuerySpecError(f"{self.spec.name}: {missing} are not columns of its @attributes-from result")
        for key in self.spec.keys:
            values = wanted.get_level_values(key).unique()
            frame = frame.where(F.col(key).isin([v.item() if hasattr(v, "item") else v for v in values]))
        table = to_pandas(frame.select(*self.spec.keys, *self.spec.attributes)).set_index(list(self.spec.keys))
        return table[~table.index.duplicated()].reindex(wanted)

    def snapshot_notes(self, totals) -> tuple[str, ...]:
        """What a snapshot's reader should know besides the estimate: nothing, for a hand-written spec."""
        return ()

    def state(self) -> dict:
        """What a resumed run rebuilds the query from: its spec and batched data."""
        return {"query": str(self.spec.path if not str(self.name).isdigit() else int(self.name)),
                "data": str(self.data.data), "seed": self.data.seed}

    @property
    def holding(self) -> bool:
        """Whether it holds cached static views (a query closes them when its last batch is in)."""
        return bool(self._statics)

    def close(self) -> None:
        """Let go of the cached static views; a later step caches them again."""
        with _STATIC_LOCK:
            for key, frame in self._statics:
                _STATIC_USERS[key] -= 1
                if not _STATIC_USERS[key]:
                    del _STATIC_USERS[key]
                    frame.unpersist()
        self._statics = []

    def _narrow_statics(self) -> None:
        """Point the static views at their cached frames read no wider than this session's file scans.

        A cached frame keeps the partitions of the query that computed it, which may have had more cores;
        an arbiter that grants this job fewer narrows its scans (``spark.sql.files.maxPartitionNum``), and
        without the same bound on the cache a scan of it is a stage wider than the grant, which a capped
        pool can only run whole (the workload benchmark counted a third of all epochs over their cores)."""
        widest = self.spark.conf.get("spark.sql.files.maxPartitionNum", None)
        for (view, _), (_, frame) in zip(self.spec.statics, self._statics):
            (frame.coalesce(int(widest)) if widest else frame).createOrReplaceTempView(view)

    def _show(self, batch_ids) -> None:
        """Point the sampled tables' views at batches ``batch_ids`` (the tables are opened once)."""
        if self._frames is None:
            self._frames = self.data.open(self.spark, self.spec.layout)
        self.data.show_batches(self._frames, batch_ids)

    def _cache_statics(self) -> None:
        """Register the spec's static views, cached: the first query that reads one computes it once."""
        with _STATIC_LOCK:
            for view, sql in self.spec.statics:
                frame = self.spark.sql(sql)
                key = (str(self.data.data), sql)
                if key not in _STATIC_USERS:
                    frame.cache()
                _STATIC_USERS[key] = _STATIC_USERS.get(key, 0) + 1
                self._statics.append((key, frame))
                frame.createOrReplaceTempView(view)
