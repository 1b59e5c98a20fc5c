"""A user's own aggregate query, SQL text or DataFrame, run progressively by the one engine.

:func:`query` reads Spark's analyzed plan of the query (:mod:`.sqlplan`), derives its progressive spec
(:mod:`.rewrite`) and returns the one engine (:class:`.engine.ProgressiveQuery`: chunks of batches per Spark
query, :class:`.totals.RunningTotals`, intervals, ordering) over a :class:`PlanSource`, whose per-chunk
partial queries are built from the plan itself. A query the rewrite
cannot answer batch by batch becomes an :class:`ExactQuery`: one step, the plain query's answer, and
the reason in :attr:`.engine.Snapshot.exact_reason`.

The batched data is substituted *in the plan*, not in the SQL text: the fact table's leaf is replaced by
the same rows with a batch column, restricted to the chunk's batches, and the batch column is carried up
to the aggregate (appended to each projection on the way), which groups by it too. Text rewriting (or
temp views shadowing table names) would not reach a DataFrame, a qualified catalog table or a Parquet
path, and would need a second parser; the plan is what Spark itself executes, already resolved, so a
table of any source is substituted the same way and every other operator (joins, filters, subqueries
over other tables) is left exactly as Spark analyzed it. Spark optimizes the rebuilt plan as usual: the
batch filter is pushed into the scan, and through equi-joins on the key into the joined tables.

Batches: a prepared layout of the fact table (:mod:`.layouts`: Parquet partitioned by batch, so a step
reads its batches' files only) when one matches the table, its key and the batch count and is not older
than the table; otherwise each chunk hashes the key on the fly (``pmod(xxhash64(key, seed), B)``) over the
whole table, which is slower (every chunk scans the table) and is said in the snapshot's notes.
"""

from __future__ import annotations

import logging
import time

import pandas as pd

from . import sqlplan
from .engine import ProgressiveQuery, Snapshot, check_options, read_state
from .frames import QueryError, column, frame_of, query_frame, to_pandas
from .layout_root import default_root
from .layouts import batches_of, find_layout, key_layout
from .rewrite import NotProgressive, derive, describe
from .spec import batch_count, batch_of
from .unique import is_unique

LOG = logging.getLogger(__name__)
#: The batch column's name inside the rebuilt plan (unlikely to clash with a user's column).
BATCH_ATTRIBUTE = "__rotary_batch"


def query(spark, sql_or_frame, batches: int = 20, seed: int = 0, order_seed: int | None = None,
          confidence: float = 0.95, growth: float = 4.0, layouts=None):
    """A progressive run of ``sql_or_frame`` (SQL text or a DataFrame of ``spark``'s), or an exact one.

    Parameters
    ----------
    spark : SparkSession
        The session whose tables and temporary views the query reads.
    sql_or_frame : str or DataFrame
        A plain query over catalog tables, temporary views or Parquet paths.
    batches : int, default=20
        How many random batches the fact table is split into.
    seed : int, default=0
        Seed of the batch split (the hash); ``order_seed`` (default: ``seed``) orders the batches.
    layouts : str, Path or False, optional
        Folder of prepared layouts (:func:`.layouts.prepare_for`, :func:`.layouts.prepare_table`; default
        where ``prepare`` writes them, ``~/.cache/sparkrm/rotary/layouts``): the fact table's layout with
        ``batches`` and ``seed``, when there is one not older than the table, is read one batch's files at a
        time; otherwise (and with ``layouts=False``) batches are hashed on the fly.

    Returns
    -------
    ProgressiveQuery or ExactQuery
        A progressive query (its ``source`` a :class:`PlanSource`) or an exact one; both iterate over
        :class:`.engine.Snapshot` objects, the last one exact.

    Raises
    ------
    QueryError
        One line naming the problem when Spark cannot analyze the query (an unknown table or column, a
        syntax error): Spark's own message.
    UsageError
        ``batches`` is not a whole number in :data:`.spec.BATCHES`.
    LayoutError
        The fact table's layout is damaged (a batch missing or short): it is never read into an answer.
    """
    return _query(spark, sql_or_frame, batches, seed, order_seed, confidence, growth, layouts)


def resume(spark, path) -> ProgressiveQuery:
    """A plain query's run continued from checkpoint folder ``path`` (written by
    :meth:`.engine.ProgressiveQuery.checkpoint`), in ``spark``, whose tables and temporary views must resolve
    the query as when it was checkpointed.

    Raises
    ------
    QueryError
        One line when the query no longer analyzes, no longer runs progressively or by the same batches,
        or a table it reads changed since the checkpoint (rerun it from the start then).
    """
    from pathlib import Path

    path = Path(path).expanduser()
    state = read_state(path)
    if "sql" not in state:
        raise QueryError(f"{path} holds a TPC-H spec's run, not a plain query's: resume it with "
                         "ProgressiveQuery.resume (or the run command's --resume)")
    job = _query(spark, state["sql"], state["batches"], state["seed"], state["order_seed"], state["confidence"],
                 state["growth"], state["layouts"], batch_key=tuple(state["batch_key"]))
    if not isinstance(getattr(job, "source", None), PlanSource) or \
            [a.name for a in job.source.derivation.batch_key] != state["batch_key"]:
        raise QueryError(f"{path}: the query no longer runs by the batches it was checkpointed with; run it from "
                         "the start")
    if job.source.tables_digest() != state["tables"]:
        raise QueryError(f"{path}: a table the query reads changed since the checkpoint (new, removed or changed "
                         "files); its running totals would mix two versions: run the query from the start")
    job._restore(state, path)
    return job


def progressive(spark, query, data=None, batches: int = 20, **options):
    """Yield a :class:`.engine.Snapshot` after each batch of ``query``.

    ``query`` is a TPC-H number or a spec path over the TPC-H folder ``data``; or, without ``data``, a plain
    aggregate query over the user's own tables (SQL text or a DataFrame), whose progressive form is derived
    from Spark's analysis of it (:func:`query`; a query it cannot batch is answered exactly in one step, and
    the snapshot's ``exact_reason`` says why)."""
    if data is None:
        return iter(_query_of(spark, query, batches, **options))
    return iter(ProgressiveQuery(spark, query, data, batches, **options))


_query_of = query  # for progressive(), whose argument is named query too


def _query(spark, sql_or_frame, batches, seed, order_seed, confidence, growth, layouts, batch_key=None):
    """:func:`query`; ``batch_key`` (a resumed run's) imposes the batching key and a layout by exactly it."""
    check_options(confidence, growth)
    batches = batch_count(batches)
    frame = query_frame(spark, sql_or_frame)
    plan = sqlplan.analyzed(frame)
    try:
        derivation = derive(plan, name=_name(sql_or_frame), batch_key=batch_key or None)
    except NotProgressive as e:
        LOG.warning("running the query exactly in one step: %s", e)
        return ExactQuery(frame, str(e), confidence)
    layout, note, co_layouts, root = None, None, [], False
    if layouts is not False:
        root = default_root() if layouts is None else layouts
        if batch_key is not None:
            layout = key_layout(root, derivation.fact, tuple(batch_key), batches, seed)
        else:
            layout, note = find_layout(spark, root, derivation, batches, seed)
        if layout is not None and list(layout.key) != [a.name for a in derivation.batch_key]:
            derivation = derive(plan, name=_name(sql_or_frame), batch_key=layout.key)
        for leaf, attribute in derivation.co_batched:
            co_layout = key_layout(root, leaf, (attribute.name,), batches, seed)
            if co_layout is not None:
                co_layouts.append((leaf, co_layout))
    derivation = _with_lookup(spark, derivation, root)
    LOG.info("progressive: batching %s by %s into %d batches (%s)", derivation.fact_name,
             [a.name for a in derivation.batch_key] or "the whole row", batches,
             f"layout {layout.folder}" if layout else "hashed on the fly")
    source = PlanSource(spark, frame, derivation, batches=batches, seed=seed, layout=layout, layout_note=note,
                        co_layouts=co_layouts, sql=sql_or_frame if isinstance(sql_or_frame, str) else None,
                        layouts_root=root)
    return ProgressiveQuery.over(source, seed if order_seed is None else order_seed, confidence, growth)


def _with_lookup(spark, derivation, root):
    """``derivation`` without a table's other columns in its groups (looked up by the table's key instead), where
    one of its :attr:`~.rewrite.Derivation.dependent_keys` has a key Spark finds unique (:func:`.unique.is_unique`)."""
    for dependent in derivation.dependent_keys:
        if is_unique(spark, dependent.leaf, dependent.key[1], root):
            return derivation.looking_up(dependent)
    return derivation


def _name(sql_or_frame) -> str:
    return " ".join(sql_or_frame.split())[:60] if isinstance(sql_or_frame, str) else "dataframe"


class PlanSource:
    """A plain aggregate query's batches, from its plan with the fact table substituted (see the module
    docstring): the source of a :class:`.engine.ProgressiveQuery` (:func:`query` builds one)."""

    def __init__(self, spark, frame, derivation, batches: int = 20, seed: int = 0, layout=None,
                 layout_note: str | None = None, co_layouts: list | None = None, sql: str | None = None,
                 layouts_root=False):
        self.spark = spark.newSession()  # the plan is resolved: its own SQL conf, the same tables
        self.spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", "true")
        self.name, self.frame, self.derivation = "query", frame, derivation
        self.sql = sql  # the text a checkpoint resumes from (None for a DataFrame)
        self.layouts_root = layouts_root  # where its layouts were looked up (False: none)
        self.spec = derivation.spec
        if derivation.constants:  # uncorrelated scalar subqueries of HAVING: computed once, exactly
            import dataclasses

            values = tuple((name, frame_of(self.spark, e.jvm.plan()).collect()[0][0])
                           for name, e in derivation.constants)
            self.spec = dataclasses.replace(self.spec, constants=values)
        self._batches, self.seed = batches, seed
        self.layout = layout
        self.notes = list(derivation.notes) + ([layout_note] if layout_note else [])
        if self.layout is None:
            self.notes.append(f"{derivation.fact_name} is not prepared: each Spark query hashes it into batches "
                              "on the fly and scans it whole (slower; prepare it to read one batch's files)")
        #: (leaf, Layout) of the tables read by the same batches as the fact table
        self.co_layouts = co_layouts or []
        self._leaf_frames: dict = {}  # (layout folder, id(leaf)) -> Layout.leaf_frame
        for leaf, co_layout in self.co_layouts:
            self.notes.append(f"{describe(leaf)} is read by the same batches (prepared by "
                              f"{', '.join(co_layout.key)})")
        if derivation.lookup is not None:
            lookup = derivation.lookup
            self.notes.append(f"{', '.join(label for label, _ in lookup.attributes)}: looked up by {lookup.key[0]} "
                              f"(unique in {describe(lookup.leaf)}) for the answer's rows")

    @property
    def batches(self) -> int:
        return self._batches

    def snapshot_notes(self, totals) -> tuple[str, ...]:
        """How the batches are read, and the groups of a HAVING answer that may still change side."""
        notes = list(self.notes)
        shown, left_out = totals.having_near
        if shown or left_out:
            notes.append(f"HAVING: {shown} group(s) shown and {left_out} left out lie within their interval of "
                         "the threshold (they may change side)")
        return tuple(notes)

    def rows(self, batch_ids) -> pd.DataFrame:
        """The partial totals of batches ``batch_ids`` per batch and group, collected (one Spark query)."""
        return to_pandas(self.partial_frame(batch_ids))

    def partial_frame(self, batch_ids):
        """The partial totals of batches ``batch_ids`` per batch and group, as one Spark DataFrame."""
        d = self.derivation
        jvm = self.spark._jvm
        replacement = self._replacement([int(b) for b in batch_ids])
        rplan = replacement._jdf.queryExecution().analyzed()
        batch = sqlplan.items(rplan.output())[-1]
        others = {id(leaf): _without_batch(jvm, self._layout_batches(layout, leaf, batch_ids))
                  for leaf, layout in self.co_layouts}
        reads = {id(leaf): self._subquery_read(leaf, batch_ids) for _, leaves in d.subquery_sites for leaf in leaves}
        reads.update(others)  # co-batched tables read in subqueries are replaced alike
        sites = {depth: reads for depth in {depth for depth, _ in d.subquery_sites} | set(d.co_batched_filters)}
        child = _rebuild(jvm, d.aggregate.children[0], d.fact_path, rplan, batch, sites, others=others)
        frame = frame_of(self.spark, child)
        keys = [column(jvm, e.jvm).alias(name) for name, e in d.keys]
        totals = [_partial_column(jvm, p).alias(p.name) for p in d.partials]
        return frame.groupBy(column(jvm, batch).alias("rotary_batch"), *keys).agg(*totals)

    def _replacement(self, batch_ids):
        """The fact table's rows of batches ``batch_ids`` with their batch as the last column."""
        from pyspark.sql import functions as F

        if self.layout is not None:
            return self._layout_batches(self.layout, self.derivation.fact, batch_ids)
        fact = frame_of(self.spark, self.derivation.fact.jvm)
        jvm = self.spark._jvm
        key = [column(jvm, a.jvm) for a in (self.derivation.batch_key or self.derivation.fact.output)]
        batch = batch_of(key, self.seed, self._batches)
        return fact.withColumn(BATCH_ATTRIBUTE, batch).where(F.col(BATCH_ATTRIBUTE).isin(batch_ids))

    def _layout_batches(self, layout, leaf, batch_ids):
        """Batches ``batch_ids`` of ``layout`` as ``leaf``'s rows, the layout read once per leaf and query."""
        key = (layout.folder, id(leaf))
        if key not in self._leaf_frames:
            self._leaf_frames[key] = layout.leaf_frame(self.spark, leaf)
        return batches_of(self._leaf_frames[key], batch_ids)

    def _subquery_read(self, leaf, batch_ids):
        """Another read of the fact table (in a correlated subquery) restricted to the same batches: a plan
        with the leaf's attributes only."""
        jvm = self.spark._jvm
        if self.layout is not None:
            return _without_batch(jvm, self._layout_batches(self.layout, leaf, batch_ids))
        names = [a.name for a in self.derivation.batch_key]
        key = [column(jvm, a.jvm) for a in leaf.output if a.name in names]
        batch = batch_of(key, self.seed, self._batches)
        frame = frame_of(self.spark, leaf.jvm).where(batch.isin([int(b) for b in batch_ids]))
        return frame._jdf.queryExecution().analyzed()

    def read_attributes(self, wanted: pd.Index) -> pd.DataFrame:
        """The looked-up columns (:attr:`.rewrite.Derivation.lookup`) of the groups ``wanted``, indexed like it:
        one Spark query over their table, filtered on the unique key."""
        jvm = self.spark._jvm
        lookup = self.derivation.lookup
        (label, attribute), columns = lookup.key, lookup.attributes
        values = [v.item() if hasattr(v, "item") else v for v in wanted.get_level_values(label).unique()]
        key = column(jvm, attribute.jvm)
        frame = frame_of(self.spark, lookup.leaf.jvm).where(key.isin(values))
        table = to_pandas(frame.select(key.alias(label), *[column(jvm, e.jvm).alias(name) for name, e in columns]))
        found = table.drop_duplicates(label).set_index(label).reindex(wanted.get_level_values(label))
        return found.set_axis(wanted)

    holding = False  # nothing is held between steps

    def close(self) -> None:
        pass

    def state(self) -> dict:
        """What :func:`resume` rebuilds the query from. A query given as a DataFrame cannot be rebuilt from a
        file: QueryError."""
        if self.sql is None:
            raise QueryError("a query given as a DataFrame cannot be checkpointed (there is no text to rebuild "
                             "it from); give the query as SQL text over tables or temporary views")
        return {"sql": self.sql, "seed": self.seed, "batch_key": [a.name for a in self.derivation.batch_key],
                "layouts": False if self.layouts_root is False else str(self.layouts_root),
                "tables": self.tables_digest()}

    def tables_digest(self) -> str:
        """A digest of every file the query's tables read (path, size, modification time): a checkpoint
        resumes only over the same data."""
        leaves = [node for node in self.derivation.plan.walk() if not node.children]
        return sqlplan.files_digest({node.source: sqlplan.table_files(node) for node in leaves
                                     if node.source.startswith("files:")})


def _without_batch(jvm, frame):
    """The analyzed plan of a layout's batches read as a leaf's rows (:meth:`.layouts.Layout.leaf_frame`),
    without the batch column."""
    plan = frame._jdf.queryExecution().analyzed()
    return jvm.org.apache.spark.sql.catalyst.plans.logical.Project(
        sqlplan.seq(jvm, sqlplan.items(plan.output())[:-1]), plan)


def _partial_column(jvm, partial):
    from pyspark.sql import functions as F

    f = partial.function
    if f == "count_star":
        return F.count(F.lit(1))
    x = column(jvm, partial.argument.jvm)
    if f == "sum":
        return F.sum(x)
    if f == "count":
        return F.count(x)
    if f == "sum_double":
        return F.sum(x.cast("double"))
    if f == "sum_squares":
        return F.sum(x.cast("double") * x.cast("double"))
    if f == "min":
        return F.min(x)
    if f == "max":
        return F.max(x)
    if f == "collect_set":
        return F.collect_set(x)
    if f == "count_distinct":
        return F.count_distinct(x)
    raise ValueError(f"unknown partial function {f!r}")


def _rebuild(jvm, node, path, replacement, batch, sites=None, depth=0, others=None):
    """``node`` (a sqlplan.Node) with the leaf at ``path`` replaced by ``replacement`` and the batch
    attribute appended to every projection between them (joins, filters and aliases pass it on); in the
    Filters at the depths of ``sites``, the subqueries' reads of the fact table are replaced as mapped; the
    other leaves ``others`` maps (by id(), co-batched tables) by their plans."""
    if not path:
        return replacement
    others = others or {}
    children = [_rebuild(jvm, child, path[1:], replacement, batch, sites, depth + 1, others) if i == path[0]
                else _with_leaves(jvm, child, others) for i, child in enumerate(node.children)]
    rebuilt = node.jvm.withNewChildren(sqlplan.seq(jvm, children))
    if sites and depth in sites:
        condition = _with_reads(jvm, node.exprs[0], sites[depth])
        rebuilt = jvm.org.apache.spark.sql.catalyst.plans.logical.Filter(condition, rebuilt.child())
    if node.kind == "Aggregate":  # an inner aggregate grouped by the key: the batch is a function of its groups
        rebuilt = jvm.org.apache.spark.sql.catalyst.plans.logical.Aggregate(
            sqlplan.seq(jvm, sqlplan.items(rebuilt.groupingExpressions()) + [batch]),
            sqlplan.seq(jvm, sqlplan.items(rebuilt.aggregateExpressions()) + [batch]), rebuilt.child(), rebuilt.hint())
    if node.kind == "Project":
        projections = sqlplan.items(rebuilt.projectList()) + [batch]
        rebuilt = jvm.org.apache.spark.sql.catalyst.plans.logical.Project(sqlplan.seq(jvm, projections),
                                                                         rebuilt.child())
    return rebuilt


def _with_reads(jvm, e, reads: dict):
    """Expression ``e`` (a sqlplan.Expr) with the leaves of its subquery plans replaced as ``reads`` maps them
    (by the id() of the leaf's sqlplan.Node)."""
    if e.plans:
        return e.jvm.withNewPlan(_with_leaves(jvm, e.plans[0], reads))
    if not any(sub.plans for sub in e.walk()):
        return e.jvm
    return e.jvm.withNewChildren(sqlplan.seq(jvm, [_with_reads(jvm, c, reads) for c in e.children]))


def _with_leaves(jvm, node, reads: dict):
    """``node`` with the leaves ``reads`` maps (by the id() of their sqlplan.Node) replaced by their plans; a
    subtree holding none is returned as it is, without rebuilding it through py4j."""
    if not node.children:
        return reads.get(id(node), node.jvm)
    if not any(id(leaf) in reads for leaf in _leaves(node)):
        return node.jvm
    return node.jvm.withNewChildren(sqlplan.seq(jvm, [_with_leaves(jvm, c, reads) for c in node.children]))


def _leaves(node):
    """The leaves under ``node`` through its children (not inside its expressions' subqueries)."""
    if not node.children:
        yield node
    for child in node.children:
        yield from _leaves(child)


class ExactQuery:
    """A query answered exactly in one step (what the rewrite could not batch), with the reason."""

    def __init__(self, frame, reason: str, confidence: float = 0.95):
        self.frame, self.reason, self.confidence = frame, reason, confidence
        self.batches, self.elapsed_s, self._snapshot = 1, 0.0, None
        self.spec = None

    @property
    def batches_done(self) -> int:
        return 1 if self._snapshot else 0

    @property
    def done(self) -> bool:
        return self._snapshot is not None

    def step(self) -> Snapshot:
        if self.done:
            raise StopIteration("the exact answer is in")
        start = time.perf_counter()
        result = to_pandas(self.frame)
        self.elapsed_s += time.perf_counter() - start
        self._snapshot = Snapshot(1, 1, self.elapsed_s, result, pd.DataFrame(index=result.index), self.confidence,
                                  exact_reason=self.reason,
                                  notes=(f"answered exactly in one step: {self.reason}",))
        return self._snapshot

    def snapshot(self) -> Snapshot:
        if self._snapshot is None:
            raise RuntimeError("no step taken yet")
        return self._snapshot

    def close(self) -> None:
        pass

    def __iter__(self):
        while not self.done:
            yield self.step()
