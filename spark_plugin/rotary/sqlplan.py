"""Spark's analyzed logical plan of a query, read through py4j into plain Python trees (the adapter).

The rewriter (:mod:`.rewrite`) decides from these trees alone, without py4j: each :class:`Node` and
:class:`Expr` carries what the derivation needs (class name, names, expression ids, types, literal
values, join types, sort directions, leaf sizes) and, in ``jvm``, the Catalyst object it came from,
which only this module and the partial-query builder touch again.

The *analyzed* plan is read, not the optimized one: it is the query as written (the top Aggregate
with HAVING, ORDER BY and LIMIT above it, subqueries still expressions), while the optimizer may
rewrite aggregates (COUNT DISTINCT into Expand and two Aggregates) and joins. The rebuilt per-batch
plan is analyzed and optimized by Spark again, so predicate pushdown and pruning still apply.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from decimal import Decimal

#: Catalyst expressions that hold a plan of their own (subqueries).
_SUBQUERIES = {"ScalarSubquery", "Exists", "ListQuery", "LateralSubquery", "InSubquery"}
#: Plan leaves that read a table's rows.
RELATIONS = {"LogicalRelation", "HiveTableRelation", "DataSourceV2Relation", "LocalRelation", "LogicalRDD",
             "StreamingRelation", "DataSourceV2ScanRelation", "Range"}


#: Sizes at or above this are Spark's "unknown" (spark.sql.defaultSizeInBytes is Long.MaxValue).
UNKNOWN_SIZE = 2 ** 62


@dataclass
class Expr:
    """One Catalyst expression."""

    kind: str  # the class's simple name: AttributeReference, Alias, Sum, Add, Literal, ...
    children: list
    jvm: object = field(repr=False)
    name: str | None = None  # attributes and aliases
    id: int | None = None  # their expression id
    dtype: str = ""  # dataType().simpleString(), "" where it cannot be read
    value: object = None  # a literal's value, as Python
    distinct: bool = False  # AggregateExpression
    has_filter: bool = False  # AggregateExpression with FILTER (WHERE ...)
    detail: str = ""  # SortOrder: "asc"/"desc" and "nulls first"/"nulls last"
    canon: str = ""  # its canonical form (same value => same text), for keys
    plans: list = field(default_factory=list)  # subquery plans
    _text: str | None = field(default=None, repr=False)

    @property
    def text(self) -> str:
        """How Spark prints it (for messages), read from the JVM when first asked for."""
        if self._text is None:
            self._text = self.jvm.toString()
        return self._text

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()


@dataclass
class Node:
    """One logical plan operator."""

    kind: str
    children: list
    exprs: list  # its expressions, in Catalyst's order (``expressions()``)
    jvm: object = field(repr=False)
    size: int = 0  # leaves: the optimizer's size in bytes
    join_type: str = ""  # Join: Inner, LeftOuter, LeftSemi, ...
    groups: int = 0  # Aggregate: how many of ``exprs`` are grouping expressions
    source: str = ""  # relation leaves: what they read (paths or table name), to match occurrences
    _output: list | None = field(default=None, repr=False)
    _text: str | None = field(default=None, repr=False)

    @property
    def output(self) -> list:
        """Its output attributes (:class:`Expr`), read from the JVM when first asked for: the rewrite reads
        only the leaves' and the root's, and reading every operator's through py4j was most of the cost."""
        if self._output is None:
            self._output = [expr(a) for a in items(self.jvm.output())]
        return self._output

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = self.jvm.simpleString(120)
        return self._text

    def walk(self):
        """Every node of this tree, subquery plans inside expressions included."""
        yield self
        for e in self.exprs:
            for sub in e.walk():
                for plan in sub.plans:
                    yield from plan.walk()
        for c in self.children:
            yield from c.walk()


def seq(jvm, items):
    """A Scala immutable Seq of ``items``."""
    array = jvm.java.util.ArrayList()
    for item in items:
        array.add(item)
    return jvm.scala.jdk.javaapi.CollectionConverters.asScala(array).toList()


def items(scala_seq) -> list:
    return [scala_seq.apply(i) for i in range(scala_seq.size())]


def analyzed(frame):
    """The analyzed logical plan of a pyspark DataFrame, as a :class:`Node` tree."""
    return node(frame._jdf.queryExecution().analyzed())


def node(plan) -> Node:
    kind = plan.getClass().getSimpleName()
    children = [node(c) for c in items(plan.children())]
    exprs = [expr(e) for e in items(plan.expressions())]
    out = Node(kind, children, exprs, plan)
    if kind == "Join":
        out.join_type = plan.joinType().toString()
    elif kind == "Aggregate":
        out.groups = plan.groupingExpressions().size()
    if not children:
        try:
            out.size = int(plan.stats().sizeInBytes())
        except Exception:  # noqa: BLE001 - a leaf without statistics counts as empty
            out.size = 0
        if out.size >= UNKNOWN_SIZE:  # spark.sql.defaultSizeInBytes: Spark does not know (a Python DataFrame)
            out.size = -1
        out.source = _source(plan, kind)
    return out


def _source(plan, kind: str) -> str:
    """What a leaf reads: the root paths of a file relation, a catalog table's name, else its canonical text."""
    if kind == "LogicalRelation":
        try:
            return "files:" + ",".join(sorted(str(p) for p in items(plan.relation().location().rootPaths())))
        except Exception:  # noqa: BLE001 - not a file relation
            pass
    if kind == "HiveTableRelation":
        return "table:" + plan.tableMeta().identifier().unquotedString()
    try:
        if kind == "LogicalRDD":  # a DataFrame made in Python: a self-join's copies share the RDD
            return f"rdd:{plan.rdd().id()}"
        if kind == "LocalRelation":
            return f"local:{plan.data().hashCode()}"  # equal rows: the same table, for our purpose
    except Exception:  # noqa: BLE001
        pass
    names = ",".join(a.name() for a in items(plan.output()))
    return f"plan:{plan.canonicalized().toString()}:{names}"


def expr(e) -> Expr:
    kind = e.getClass().getSimpleName()
    out = Expr(kind, [expr(c) for c in items(e.children())], e)
    try:
        out.dtype = e.dataType().simpleString()
    except Exception:  # noqa: BLE001 - unresolved or typeless (SortOrder has one; some do not)
        pass
    if kind in ("AttributeReference", "Alias", "OuterReference"):
        named = e.e() if kind == "OuterReference" else e
        out.name, out.id = named.name(), int(named.exprId().id())
    elif kind == "Literal":
        out.value = _literal(e, out.dtype)
    elif kind == "AggregateExpression":
        out.distinct, out.has_filter = bool(e.isDistinct()), bool(e.filter().isDefined())
    elif kind == "SortOrder":
        out.detail = ("desc" if e.direction().toString() == "Descending" else "asc",
                      e.nullOrdering().toString() == "NullsFirst")
    if kind in _SUBQUERIES:
        try:
            out.plans = [node(e.plan())]
        except Exception:  # noqa: BLE001 - InSubquery holds its plan in a ListQuery child
            pass
    return out


def canonical(e: Expr) -> str:
    """A text equal for semantically equal expressions (Catalyst's canonical form)."""
    if not e.canon:
        e.canon = e.jvm.canonicalized().toString()
    return e.canon


def _literal(e, dtype: str):
    value = e.value()
    if value is None:
        return None
    if dtype.startswith("decimal"):
        return Decimal(value.toString())
    if dtype in ("tinyint", "smallint", "int", "bigint"):
        return int(value)
    if dtype in ("float", "double"):
        return float(value)
    if dtype == "boolean":
        return bool(value)
    if dtype == "string":
        return value.toString()
    return _Opaque(str(value), dtype)


@dataclass(frozen=True)
class _Opaque:
    """A literal of a type the rewriter does not compute with (a date, an interval, ...)."""

    text: str
    dtype: str


def table_files(leaf) -> dict:
    """The files a relation leaf (a :class:`Node`) reads: path -> [size, modification time]."""
    location = leaf.jvm.relation().location()
    return {str(f.getPath().toString()): [int(f.getLen()), int(f.getModificationTime())]
            for f in items(location.allFiles())}


def files_digest(files: dict) -> str:
    """A digest of :func:`table_files` listings (any JSON-able dict of them): equal only for the same files."""
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
