"""Prepared batch layouts of a user's table: its rows split into B random batches by a key, stored once.

A progressive query over an unprepared table hashes its key into batches on the fly, so every Spark query
scans the whole table. :func:`prepare_table` writes the table once as Parquet partitioned by batch
(``rotary_batch=b``), so a step reads its batches' files only; every later query whose fact table it is
uses the layout, whatever its key (any split of the rows into batches gives exact totals; the key decides
only which groups are whole within a batch, and the rewrite is told the layout's key).

* **Resumable.** Batches are written by :data:`WRITE_JOBS` Spark jobs (a share of the batches each, one
  scan of the table each) into a temporary folder, with the batches done recorded beside them; an
  interrupted ``prepare`` continues with the batches not yet written. The folder
  is renamed into place, with its manifest, only when every batch is in: nothing half-written is used.
* **Never older than its table.** The manifest records the table's files (path, size, modification time).
  A layout whose table has new, removed or changed files is not used (the snapshot says so and the query
  hashes on the fly); ``prepare`` makes it again.
* **Whole.** The manifest records each batch's rows, and a layout is read only once its batches' Parquet
  footers show those rows (no Spark job): a layout with a batch deleted or a file replaced is refused in one
  line (delete it or prepare again), never read into an answer called exact. ``prepare`` makes it again.
* **Where.** ``<root>/<table>-<hash of its source>/<key>-b<B>-s<seed>/``. The root, each layout and its
  temporary folder carry sparkrm's ownership marker (:mod:`spark_plugin.ownership`): a layout is replaced
  only when it is provably one, and a root holding anything else of the user's is refused.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..ownership import FolderKind
from . import sqlplan
from .batches import batch_rows, check_ours
from .frames import frame_of, query_frame, spark_message
from .layout_root import LayoutError, claim_root
from .rewrite import NotProgressive, derive
from .spec import BATCH_COLUMN, batch_count, batch_of

LOG = logging.getLogger(__name__)
MANIFEST = "_ROTARY_LAYOUT.json"
PROGRESS = "_ROTARY_PROGRESS.json"
#: A table is written in this many Spark jobs (each scans it once and writes a share of the batches): fewer
#: scans than a job per batch, and an interrupted ``prepare`` loses at most one job's share.
WRITE_JOBS = 4
#: A layout (and its temporary folder while it is written): Spark's partition folders and commit files, and
#: Rotary's manifest and progress.
LAYOUT = FolderKind("Rotary layout", (f"{BATCH_COLUMN}=*", MANIFEST, PROGRESS, "_SUCCESS", "._SUCCESS.crc",
                                      "_temporary"))


@dataclass(frozen=True)
class Layout:
    """A prepared layout: its folder and what it was made from."""

    folder: Path
    source: str
    key: tuple
    batches: int
    seed: int
    rows: tuple = ()  # each batch's rows, as prepare wrote them

    def check(self) -> "Layout":
        """This layout, once each of its batches holds the rows prepare wrote (their Parquet footers say).

        Raises
        ------
        LayoutError
            One line naming the folder and the first batch found short, missing or unreadable, and the fix.
        """
        fix = f"delete {self.folder} or run prepare again"
        if len(self.rows) != self.batches:
            raise LayoutError(f"the layout in {self.folder} records no row count per batch (an earlier sparkrm "
                              f"wrote it), so it cannot be checked whole: {fix}")
        for b, written in enumerate(self.rows):
            found = batch_rows(self.folder, b)
            if found != written:
                state = ("has an unreadable file" if found is None else "is missing" if found == 0
                         else f"holds {found:,} rows")
                raise LayoutError(f"the layout in {self.folder} is damaged: batch {b} {state} where prepare wrote "
                                  f"{written:,} rows; its answers would not cover the table: {fix}")
        return self

    def leaf_frame(self, spark, fact):
        """The layout as the rows of leaf ``fact`` (a sqlplan.Node): the same attributes (expression ids) as
        the leaf the query plan reads, and the batch column last. A step filters it to its batches
        (:func:`batches_of`); reading it once per query saves listing the files at every step."""
        jvm = spark._jvm
        plan = spark.read.parquet(str(self.folder))._jdf.queryExecution().analyzed()
        by_name = {a.name(): a for a in sqlplan.items(plan.output())}
        alias = jvm.org.apache.spark.sql.catalyst.expressions.Alias
        empty = sqlplan.seq(jvm, [])
        columns = [alias(by_name[a.name], a.name, a.jvm.exprId(), empty, jvm.scala.Option.empty(), empty)
                   for a in fact.output] + [by_name[BATCH_COLUMN]]
        project = jvm.org.apache.spark.sql.catalyst.plans.logical.Project(sqlplan.seq(jvm, columns), plan)
        return frame_of(spark, project)


def batches_of(frame, batch_ids):
    """The rows of ``frame`` (a :meth:`Layout.leaf_frame`) in batches ``batch_ids``: Spark reads their files only."""
    from pyspark.sql import functions as F

    return frame.where(F.col(BATCH_COLUMN).isin([int(b) for b in batch_ids]))


def table_leaf(spark, table):
    """The one relation leaf a table (a name, a Parquet path or a DataFrame) reads, and its frame."""
    from pyspark.sql import DataFrame

    if isinstance(table, DataFrame):
        frame = table
    elif Path(str(table)).expanduser().exists():
        frame = spark.read.parquet(str(Path(str(table)).expanduser()))
    else:
        try:
            frame = spark.table(str(table))
        except Exception as e:  # noqa: BLE001 - Spark's AnalysisException; said in one line
            raise LayoutError(f"{table} is neither a table, a temporary view nor a Parquet path: "
                              f"{spark_message(e)}") from None
    leaves = [n for n in sqlplan.analyzed(frame).walk() if not n.children]
    files = [n for n in leaves if n.source.startswith("files:")]
    if len(leaves) != 1 or len(files) != 1:
        raise LayoutError(f"{table} is not one file-based table (it reads {len(leaves)} relation(s)); prepare "
                          "the table a view reads, not the view")
    return files[0], frame


def layout_folder(root, source: str, key, batches: int, seed: int) -> Path:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", source.rstrip("/").split("/")[-1])[-40:] or "table"
    digest = hashlib.blake2b(source.encode(), digest_size=6).hexdigest()
    return Path(root).expanduser() / f"{name}-{digest}" / f"{'+'.join(key)}-b{batches}-s{seed}"


def prepare_table(spark, table, key, batches: int = 20, seed: int = 0, root=None, progress=None) -> Layout:
    """Split ``table`` into ``batches`` random batches by ``key`` and store them for progressive queries.

    Parameters
    ----------
    table : str or DataFrame
        A catalog table, a temporary view over files, or a Parquet path.
    key : str or list of str
        The column(s) hashed into a batch: a join key of the queries (rows with the same key share a batch).
    root : str or Path, optional
        Where layouts live (default ``~/.cache/sparkrm/rotary/layouts``).
    progress : callable, optional
        Called as ``progress(done, batches)`` after each batch is written.

    Returns
    -------
    Layout
        The layout, reused when it is already complete and not older than the table.
    """
    from pyspark.sql import functions as F

    batches = batch_count(batches)
    root = claim_root(root)
    keys = (key,) if isinstance(key, str) else tuple(key)
    leaf, frame = table_leaf(spark, table)
    missing = [k for k in keys if k not in frame.columns]
    if missing:
        raise LayoutError(f"key {missing} is not a column of {table} (its columns: {', '.join(frame.columns)})")
    files = sqlplan.table_files(leaf)
    folder = layout_folder(root, leaf.source, keys, batches, seed)
    manifest = {"source": leaf.source, "key": list(keys), "batches": batches, "seed": seed, "files": files}
    written = _read(folder / MANIFEST)
    if written and {k: v for k, v in written.items() if k != "rows"} == manifest:
        try:
            layout = Layout(folder, leaf.source, keys, batches, seed, tuple(written.get("rows") or ())).check()
            LOG.info("layout %s is ready", folder)
            return layout
        except LayoutError as e:
            LOG.warning("%s; preparing it again", e)
    tmp = folder.with_name(folder.name + ".tmp")
    check_ours(LAYOUT, folder)  # before the work: what it replaces must be a layout, and its temporary folder too
    check_ours(LAYOUT, tmp)
    state = _read(tmp / PROGRESS)
    if not state or {k: v for k, v in state.items() if k != "done"} != manifest:
        LAYOUT.remove(tmp)  # another table version, key or count: start over
        state = {**manifest, "done": []}
    LAYOUT.claim(tmp)
    batch = batch_of([F.col(k) for k in keys], seed, batches)
    keyed = frame.withColumn(BATCH_COLUMN, batch)
    todo = [b for b in range(batches) if b not in state["done"]]
    per_job = -(-batches // WRITE_JOBS)
    for chunk in (todo[i:i + per_job] for i in range(0, len(todo), per_job)):
        shutil.rmtree(tmp / "_temporary", ignore_errors=True)  # an interrupted job's uncommitted files (in ours)
        for b in chunk:
            shutil.rmtree(tmp / f"{BATCH_COLUMN}={b}", ignore_errors=True)
        keyed.where(F.col(BATCH_COLUMN).isin(chunk)).write.mode("append").partitionBy(BATCH_COLUMN).parquet(str(tmp))
        state["done"].extend(chunk)
        (tmp / PROGRESS).write_text(json.dumps(state))
        if progress:
            progress(len(state["done"]), batches)
    rows = [batch_rows(tmp, b) for b in range(batches)]
    (tmp / PROGRESS).unlink()
    (tmp / MANIFEST).write_text(json.dumps({**manifest, "rows": rows}))
    LAYOUT.replace(folder, tmp)
    LOG.info("prepared %s: %d batches by %s in %s", table, batches, keys, folder)
    return Layout(folder, leaf.source, keys, batches, seed, tuple(rows))


def prepare_for(spark, queries, batches: int = 20, seed: int = 0, root=None, progress=None) -> list[Layout]:
    """Prepare the fact tables of ``queries`` (SQL texts or DataFrames), each by the key its queries need.

    Each query's progressive form names its fact table and the key it batches by (a join or correlation key
    that keeps its joins and subqueries exact within a batch), and the tables joined on that key, which can
    be read by the same batches (co-batched: lineitem by ``l_orderkey`` and orders by ``o_orderkey``). One
    layout is written per distinct (table, key), the one most queries ask for first, and every query asking
    for it reuses it. A query answered exactly, or whose fact table is not file-based, needs none: it is
    skipped and logged.

    Parameters
    ----------
    progress : callable, optional
        Called as ``progress(table, key, done, batches)`` after each batch is written.

    Returns
    -------
    list of Layout
        The layouts, most asked for first.
    """

    wanted: dict[tuple, list] = {}  # (source, key) -> [fact leaf, queries asking]
    for text in queries:
        try:
            derivation = derive(sqlplan.analyzed(query_frame(spark, text)))
        except NotProgressive as e:
            LOG.info("no layout for a query answered exactly (%s): %s", e, _short(text))
            continue
        if not derivation.fact.source.startswith("files:"):
            LOG.info("no layout for %s: it does not read files", derivation.fact_name)
            continue
        key = tuple(a.name for a in derivation.batch_key)
        tables = [(derivation.fact, key)] + [(leaf, (attribute.name,)) for leaf, attribute in derivation.co_batched
                                             if leaf.source.startswith("files:")]
        for leaf, leaf_key in tables:
            entry = wanted.setdefault((leaf.source, leaf_key), [leaf, 0])
            entry[1] += 1
    layouts = []
    for (source, key), (leaf, _) in sorted(wanted.items(), key=lambda item: -item[1][1]):
        if not key:
            LOG.info("no layout for %s by whole rows: its queries use any other layout of the table", source)
            continue
        table = source.removeprefix("files:").split(",")[0].rstrip("/").split("/")[-1]
        report = (lambda done, total, t=table, k=key: progress(t, k, done, total)) if progress else None
        layouts.append(prepare_table(spark, frame_of(spark, leaf.jvm), list(key), batches, seed, root, report))
    return layouts


def _short(text) -> str:
    return " ".join(text.split())[:60] if isinstance(text, str) else "a DataFrame"


def find_layout(spark, root, derivation, batches: int, seed: int):
    """The complete, current layout of the query's fact table for ``batches`` and ``seed`` (its own key's
    first, else another key's), or None; and a note for the snapshot when one exists but is older than its
    table. A damaged one is refused (:meth:`Layout.check`'s LayoutError)."""
    return _current(root, derivation.fact, batches, seed, tuple(a.name for a in derivation.batch_key))


def key_layout(root, leaf, key: tuple, batches: int, seed: int):
    """The complete, current layout of ``leaf``'s table by exactly ``key`` (a co-batched table's), or None
    (a damaged one is refused, as by :func:`find_layout`)."""
    layout, _ = _current(root, leaf, batches, seed, key, only=True)
    return layout


def _current(root, leaf, batches: int, seed: int, key: tuple, only: bool = False):
    if not leaf.source.startswith("files:"):
        return None, None
    base = layout_folder(root, leaf.source, ("x",), batches, seed).parent
    candidates = sorted(base.glob(f"*-b{batches}-s{seed}")) if base.is_dir() else []
    preferred = "+".join(key) + "-b"
    candidates = [c for c in candidates if c.name.startswith(preferred) or not only]
    candidates.sort(key=lambda p: not p.name.startswith(preferred))
    for folder in candidates:
        manifest = _read(folder / MANIFEST)
        if not manifest or manifest.get("source") != leaf.source:
            continue
        current = sqlplan.table_files(leaf)
        if manifest["files"] != current:
            changed = len(set(current) ^ set(manifest["files"])) + sum(
                1 for f in set(current) & set(manifest["files"]) if current[f] != manifest["files"][f])
            return None, (f"the layout in {folder} is older than its table ({changed} file(s) new, removed or "
                          "changed): not used; prepare the table again")
        return Layout(folder, manifest["source"], tuple(manifest["key"]), batches, seed,
                      tuple(manifest.get("rows") or ())).check(), None
    return None, None


def _read(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
