"""Tables split into B random batches, stored once per layout as Parquet partitioned by batch.

Online aggregation needs batches that are random samples and cheap to read one at a time. A layout
(:data:`.queries.LAYOUTS`) names the tables it splits and the key of each: a row goes to batch
``pmod(xxhash64(key, seed), B)``. The default ``orders`` layout splits ``lineitem`` by ``l_orderkey``
and ``orders`` by ``o_orderkey``, so a batch holds whole orders with all their line items: joins and
correlated subqueries on the order key (Q4, Q18, Q21) are then exact within a batch, and a batch's
share of a SUM is an unbiased sample of the total (cluster sampling). The ``customer`` layout keeps a
customer with its orders, ``supplier`` and ``part`` a supplier's or a part's line items. Reading batch
b prunes to its own folder, so a step costs about 1/B of a scan: the role Kafka plays in the thesis.

The batched copy lives next to the data (``<data>.batches<B>-seed<S>/<layout>/<table>``); each layout
is written into a temporary folder renamed into place when a query first needs it, and reused while
its manifest matches. The copy and each layout in it carry sparkrm's ownership marker
(:mod:`spark_plugin.ownership`): one is replaced only when it is provably Rotary's, so a folder of the
user's that happens to bear the copy's name is never emptied.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import NotOursError, SparkrmError
from ..ownership import MARKER, FolderKind
from .spec import BATCH_COLUMN, LAYOUTS, TABLES, batch_count, batch_of

LOG = logging.getLogger(__name__)
MANIFEST = "_ROTARY_BATCHES.json"
#: The batched copy beside the data: a folder per layout, and each one's temporary folder while it is written.
COPY = FolderKind("Rotary batched copy", tuple(LAYOUTS) + tuple(f"{layout}.tmp" for layout in LAYOUTS))
#: One layout of the copy: a Spark output folder per table it samples, and its manifest.
COPY_LAYOUT = FolderKind("Rotary batched layout", tuple(sorted({t for tables in LAYOUTS.values() for t in tables}))
                         + (MANIFEST,))


class BatchDataError(SparkrmError, ValueError):
    """The TPC-H data or its batched copy is missing or unusable."""


@dataclass(frozen=True)
class BatchedData:
    """A TPC-H data folder and its batched copies (one per layout, made when first needed)."""

    data: Path
    folder: Path
    batches: int
    seed: int

    def layout_folder(self, layout: str) -> Path:
        return self.folder / layout

    def open(self, spark, layout: str = "orders") -> dict:
        """The tables ``layout`` samples, as DataFrames read once (file listing is the slow part of a small
        step); every other table is registered whole as a temp view of ``spark`` at the same time."""
        sampled = LAYOUTS[layout]
        frames = {t: read_parquet(spark, self.layout_folder(layout) / t) for t in sampled}
        for table in TABLES:
            if table not in sampled:
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
        for table in TABLES:
            spark.read.parquet(str(self.data / table)).createOrReplaceTempView(table)


_SCHEMAS: dict = {}


def read_parquet(spark, folder: Path):
    """``folder``'s Parquet files as a DataFrame, with the schema inferred only on the first read in this
    process: inference runs a Spark job per table, and a progressive query opens eight tables."""
    key = (str(folder), folder.stat().st_mtime_ns)  # a folder written again is inferred again
    if key not in _SCHEMAS:
        _SCHEMAS[key] = spark.read.parquet(str(folder)).schema
    return spark.read.schema(_SCHEMAS[key]).parquet(str(folder))


def prepare(spark, data, batches: int = 20, seed: int = 0, layouts=("orders",)) -> BatchedData:
    """TPC-H data folder ``data`` (one sub-folder of Parquet files per table) with its batched copies in
    ``layouts`` made (other layouts are made when a query first needs them)."""
    batches = batch_count(batches)
    data = check_data(data)
    batched = BatchedData(data, data.with_name(f"{data.name}.batches{batches}-seed{seed}"), batches, seed)
    for layout in layouts:
        _ensure_layout(spark, batched, layout)
    return batched


def check_data(data) -> Path:
    """``data`` as a Path, once it is a folder with every TPC-H table's sub-folder (no Spark needed).

    Raises
    ------
    BatchDataError
        Naming the folder, what it lacks and how to generate the data.
    """
    data = Path(data).expanduser()
    if not data.is_dir():
        raise BatchDataError(f"{data} is not a folder; point at TPC-H Parquet data (one sub-folder per table), "
                             "generated with `python -m benchmarks.tpch` or tpchgen-cli parquet")
    missing = [t for t in TABLES if not (data / t).is_dir()]
    if missing:
        raise BatchDataError(f"{data} lacks TPC-H table folder(s) {missing}; generate the data with "
                             "`python -m benchmarks.tpch` or tpchgen-cli parquet")
    return data


#: What Spark says (in any of an error's causes) when a Parquet file's bytes are not a whole Parquet file.
_DAMAGED = re.compile(r"is not a Parquet file|FAILED_READ_FILE|CANNOT_READ_FILE_FOOTER|Could not read footer|"
                      r"EOFException|[Cc]orrupt|Can ?not read value at|ParquetDecodingException")
_FILE_URI = re.compile(r"file:(/[^\s,;'\"]+)")


def damaged_file_error(message: str, data) -> BatchDataError | None:
    """A one-line :class:`BatchDataError` for a Spark error ``message`` (its text, Java causes included)
    reporting a damaged Parquet file under ``data`` or its batched copies; None for any other error.

    The file is the first ``file:`` path the message names; the fix is to generate the data again or use an
    intact copy (for a file of a batched copy: to delete the copy, which is made again from the data).
    """
    if not _DAMAGED.search(message) or re.search(r"FILE_NOT_EXIST|FileNotFoundException|AccessDenied|Permission "
                                                   r"denied", message):
        return None  # a file gone or unreadable for its permissions is not damaged data
    found = _FILE_URI.search(message)
    if not found:
        return None
    file = Path("/" + found.group(1).lstrip("/").rstrip(".:"))
    data = Path(data).expanduser()
    if "is not a Parquet file" in message:
        reason = "it is not a whole Parquet file (truncated or overwritten)"
    elif "EOFException" in message:
        reason = "it ends before its data does (truncated)"
    else:
        reason = "its content is damaged"
    copy = next((p for p in file.parents if re.fullmatch(rf"{re.escape(data.name)}\.batches\d+-seed\d+", p.name)),
                None)
    if copy is not None:
        return BatchDataError(f"{file} cannot be read: {reason}. It belongs to Rotary's batched copy of {data}: "
                              f"delete {copy} and run again (it is made again from the data).")
    return BatchDataError(f"{file} cannot be read: {reason}. The TPC-H data in {data} is damaged: generate it "
                          "again (`python -m benchmarks.tpch` notices the damage, or tpchgen-cli parquet) or point "
                          "--data at an intact copy.")


def _ensure_layout(spark, batched: BatchedData, layout: str) -> None:
    folder = batched.layout_folder(layout)
    expected = {"batches": batched.batches, "seed": batched.seed, "data": str(batched.data.resolve()),
                "keys": LAYOUTS[layout]}
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        manifest = None
    if isinstance(manifest, dict) and {k: v for k, v in manifest.items() if k != "rows"} == expected:
        damage = _damage(folder, manifest.get("rows"), layout, batched.batches)
        if damage is None:
            return
        LOG.warning("Rotary's batched copy %s is damaged (%s): making it again, so that no answer misses rows",
                    folder, damage)
    tmp = folder.with_name(folder.name + ".tmp")
    for kind, path in ((COPY, batched.folder), (COPY_LAYOUT, folder), (COPY_LAYOUT, tmp)):
        check_ours(kind, path)  # before the work: all it replaces must be Rotary's
    LOG.info("splitting %s into %d batches by %s", batched.data, batched.batches, layout)
    COPY.claim(batched.folder)
    COPY_LAYOUT.remove(tmp)
    COPY_LAYOUT.claim(tmp)
    from pyspark.sql import functions as F

    for table, key in LAYOUTS[layout].items():
        batch = batch_of([F.col(key).cast("bigint")], batched.seed, batched.batches)
        (spark.read.parquet(str(batched.data / table))
         .withColumn(BATCH_COLUMN, batch)
         .repartition(BATCH_COLUMN)
         .write.partitionBy(BATCH_COLUMN).parquet(str(tmp / table)))
    rows = {table: [batch_rows(tmp / table, b) for b in range(batched.batches)] for table in LAYOUTS[layout]}
    (tmp / MANIFEST).write_text(json.dumps({**expected, "rows": rows}))
    COPY_LAYOUT.replace(folder, tmp)


def batch_rows(folder: Path, batch: int) -> int | None:
    """The rows of batch ``batch`` of the layout in ``folder``, from its files' Parquet footers (0: no folder,
    as for a batch no row hashed to; None: a file that is not Parquet). Spark reads every file there that is
    not hidden (``.``) or metadata (``_``), and so does this."""
    import pyarrow.parquet as pq

    part = folder / f"{BATCH_COLUMN}={batch}"
    files = [f for f in part.iterdir() if not f.name.startswith((".", "_"))] if part.is_dir() else []
    try:
        return sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    except (OSError, ValueError):  # pyarrow's ArrowInvalid is a ValueError
        return None


def _damage(folder: Path, rows, layout: str, batches: int) -> str | None:
    """Why the batched copy in ``folder`` no longer holds the rows it was written with (``rows``: per table, each
    batch's count, from its manifest), or None when every batch of every table does."""
    if not isinstance(rows, dict) or set(rows) != set(LAYOUTS[layout]):
        return "it records no row count per batch"
    for table, written in rows.items():
        if not isinstance(written, list) or len(written) != batches:
            return f"it records no row count per batch of {table}"
        for b, count in enumerate(written):
            found = batch_rows(folder / table, b)
            if found != count:
                return f"{table}'s batch {b} holds {found} rows where {count} were written"
    return None


def check_ours(kind: FolderKind, folder, what: str | None = None) -> None:
    """:meth:`FolderKind.check_writable` for a folder Rotary makes again when it is gone (a batched copy, a
    layout). A folder holding only what such a folder holds, but not the marker, is one an earlier sparkrm
    wrote: its line ends with the fix, to delete it (never said of a folder holding anything else)."""
    try:
        kind.check_writable(folder, what=what)
    except NotOursError as e:
        if kind.foreign(Path(folder).expanduser()):
            raise
        raise NotOursError(f"{e} If an earlier sparkrm wrote it (before folders carried {MARKER}), delete "
                           f"{Path(folder).expanduser()}: Rotary makes it again.") from None
