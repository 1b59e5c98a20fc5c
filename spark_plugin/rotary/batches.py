"""The fact tables split into B random batches, stored once as Parquet partitioned by batch.

Online aggregation needs batches that are random samples and cheap to read one at a time. Rows go
to batch ``pmod(xxhash64(order key, seed), B)``: ``lineitem`` by ``l_orderkey`` and ``orders`` by
``o_orderkey``, so a batch holds whole orders with all their line items. Joins and correlated
subqueries on the order key (Q4, Q18, Q21) are then exact within a batch, and a batch's share of a
SUM is an unbiased sample of the total (cluster sampling). Reading batch b prunes to its own
folder, so a step costs about 1/B of a scan: the role Kafka plays in the thesis.

The batched copy lives next to the data (``<data>.batches<B>-seed<S>/``), is written into a
temporary folder renamed into place, and is reused while its manifest matches.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from .queries import BATCH_COLUMN, SAMPLED_TABLES

ORDER_KEY = {"lineitem": "l_orderkey", "orders": "o_orderkey"}
MANIFEST = "_ROTARY_BATCHES.json"
DIMENSION_TABLES = ("customer", "nation", "part", "partsupp", "region", "supplier")


class BatchDataError(ValueError):
    """The TPC-H data or its batched copy is missing or unusable."""


@dataclass(frozen=True)
class BatchedData:
    """A TPC-H data folder and its batched fact tables."""

    data: Path
    folder: Path
    batches: int
    seed: int

    def open(self, spark) -> dict:
        """Every table as a DataFrame, read once (file listing is the slow part of a small step);
        the dimension tables are registered as temp views of ``spark`` at the same time."""
        frames = {t: read_parquet(spark, self.folder / t) for t in SAMPLED_TABLES}
        for table in DIMENSION_TABLES:
            read_parquet(spark, self.data / table).createOrReplaceTempView(table)
        return frames

    @staticmethod
    def show_batches(frames: dict, batch_ids) -> None:
        """Point the sampled tables' temp views at batches ``batch_ids`` of ``frames`` (from :meth:`open`),
        keeping the batch column for specs that group by it."""
        ids = ", ".join(str(int(b)) for b in batch_ids)
        for table, frame in frames.items():
            frame.where(f"{BATCH_COLUMN} in ({ids})").createOrReplaceTempView(table)

    def register_whole(self, spark) -> None:
        """Register every table whole (the exact query's view of the data)."""
        for table in SAMPLED_TABLES + DIMENSION_TABLES:
            spark.read.parquet(str(self.data / table)).createOrReplaceTempView(table)


_SCHEMAS: dict = {}


def read_parquet(spark, folder: Path):
    """``folder``'s Parquet files as a DataFrame, with the schema inferred only on the first read in this
    process: inference runs a Spark job per table, and a progressive query opens eight tables."""
    key = (str(folder), folder.stat().st_mtime_ns)  # a folder written again is inferred again
    if key not in _SCHEMAS:
        _SCHEMAS[key] = spark.read.parquet(str(folder)).schema
    return spark.read.schema(_SCHEMAS[key]).parquet(str(folder))


def prepare(spark, data, batches: int = 20, seed: int = 0) -> BatchedData:
    """The batched copy of TPC-H data folder ``data`` (one sub-folder of Parquet files per table)."""
    if not isinstance(batches, int) or batches < 2:
        raise ValueError(f"batches must be a whole number >= 2, not {batches!r}")
    data = Path(data)
    missing = [t for t in SAMPLED_TABLES + DIMENSION_TABLES if not (data / t).is_dir()]
    if missing:
        raise BatchDataError(f"{data} lacks TPC-H table folder(s) {missing}; generate the data with "
                             "`python -m benchmarks.tpch` or tpchgen-cli --format parquet")
    folder = data.with_name(f"{data.name}.batches{batches}-seed{seed}")
    expected = {"batches": batches, "seed": seed, "data": str(data.resolve())}
    try:
        if json.loads((folder / MANIFEST).read_text()) == expected:
            return BatchedData(data, folder, batches, seed)
    except (OSError, ValueError):
        pass
    shutil.rmtree(folder, ignore_errors=True)
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    from pyspark.sql import functions as F

    for table in SAMPLED_TABLES:
        key = ORDER_KEY[table]
        (spark.read.parquet(str(data / table))
         .withColumn(BATCH_COLUMN, F.pmod(F.xxhash64(F.col(key), F.lit(seed)), F.lit(batches)).cast("int"))
         .repartition(BATCH_COLUMN)
         .write.partitionBy(BATCH_COLUMN).parquet(str(tmp / table)))
    (tmp / MANIFEST).write_text(json.dumps(expected))
    tmp.rename(folder)
    return BatchedData(data, folder, batches, seed)
