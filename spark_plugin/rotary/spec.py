"""Progressive query specs: per-batch partial aggregates in SQL, outputs derived from their totals.

A spec is a ``.sql`` file whose header comments say how to turn the per-batch partial sums into the
query's answer::

    -- @keys: l_returnflag, l_linestatus              group columns (omitted: one group)
    -- @output: l_returnflag, sum_qty, avg_qty = sum_qty / count_order
    -- @order: l_returnflag, revenue desc
    -- @limit: 10
    -- @groups: exact                                 groups never span batches (see below)
    -- @batch-by: orders                              the batching layout (see LAYOUTS; default orders)
    -- @static: asia_nations = select n_nationkey, n_name from nation, region
    --     where n_regionkey = r_regionkey and r_name = 'ASIA'     a view computed once, over whole tables
    -- @attributes: c_name, c_phone                   output columns looked up by key, after estimation
    -- @attributes-from: select c_custkey, c_name, c_phone from customer

The SQL reads the tables its layout samples (:data:`LAYOUTS`; by default ``lineitem`` and ``orders``
split by order key), a chunk of batches at a time, and every other table whole, and returns one row
per group and batch: it selects and groups by the sampled tables' ``rotary_batch`` column (qualified
where two are joined: ``lineitem.rotary_batch``; rows with the same layout key share their batch). A
spec without that column runs one Spark query per batch. Besides the keys and the batch, the SQL
returns only SUM/COUNT-style columns: totals that add up over batches. SUM and COUNT estimates scale
them by the inverse fraction processed; a ratio of totals (an AVG) needs no scaling.

The layout decides what is exact within a batch: whole orders with their line items (``orders``:
joins and subqueries on the order key, Q4, Q18, Q21), whole customers with their orders
(``customer``: per-customer counts and absence of orders, Q13, Q22), all of a supplier's or a part's
line items (``supplier``, ``part``: per-supplier revenue, Q15; per-part average quantity, Q17).
``@groups: exact`` marks a query whose groups never span batches (orders, suppliers): such a group is
complete the moment it is seen and is reported as is (TPC-H Q3, Q15, Q18).

``@attributes`` are output columns that depend on the keys alone (a customer's name and address): the
SQL groups by the keys only, and the columns of the answer's rows are looked up by key in the result
of ``@attributes-from`` (over whole tables; a key is looked up when an answer first shows it, with the
keys ranked just below the answer). Grouping every batch by seven customer columns, long comments
included, had made Q10's exact answer 3x slower than the plain query; reading every customer's columns
once cost 3 s and 260 MB of driver memory at SF 10.

``@static`` views (one directive each) are computed once per progressive query over whole tables and
cached, and the SQL joins them instead of the tables. Without them every chunk's query would scan and
shuffle the dimension tables again, a fixed cost that made the exact final answer up to twice as slow
as the plain query. A static view over a sampled table reads all of it once (Q22's average balance
over every customer): keep such views to small tables.

TPC-H specs ship in ``spark_plugin/rotary/queries/`` (``q01.sql`` ...); :func:`load` also takes a
path to a spec of your own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..arguments import Range
from ..errors import SparkrmError
from .expressions import Expression

SPEC_DIR = Path(__file__).with_name("queries")
#: Every TPC-H table.
TABLES = ("customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier")
#: Batching layouts: the tables each splits into batches, with the key whose hash picks a row's batch.
#: Every other table is joined whole.
LAYOUTS = {
    "orders": {"lineitem": "l_orderkey", "orders": "o_orderkey"},  # whole orders with their line items
    "customer": {"customer": "c_custkey", "orders": "o_custkey"},  # whole customers with their orders
    "supplier": {"lineitem": "l_suppkey"},  # all of a supplier's line items together
    "part": {"lineitem": "l_partkey"},  # all of a part's line items together
}
#: The column of the sampled tables that names each row's batch.
BATCH_COLUMN = "rotary_batch"
#: How many batches a table may be split into. Every batch is a snapshot, a partial table per chunk and (in a
#: layout) a folder of files, so the work grows with the count: 100,000 batches of a 2,000-row table ran for
#: minutes, mostly writing and planning empty batches.
#: The rules of a run's numbers, for ``run``, ``sql`` and ``prepare``'s options and every API alike: more batches
#: give more, smaller steps, each with its own fixed cost (100,000 batches of 2,000 rows ran for minutes).
BATCHES = Range(2, 1000, whole=True, fix="Pass e.g. 20 (more batches give more, smaller steps, each with its own "
                                           "fixed cost).")
CONFIDENCE = Range(0, 1, low_open=True, high_open=True, fix="Pass e.g. 0.95.")
WINDOW = Range(2, 1000, whole=True, fix="Pass e.g. 3 (the snapshots the accuracy envelope compares).")
SEED = Range(0, 2**31 - 1, whole=True, fix="Pass e.g. 0.")
_DIRECTIVE = re.compile(r"^--\s*@([\w-]+):\s*(.*)$")
_CONTINUATION = re.compile(r"^--\s{2,}(\S.*)$")


def batch_of(columns, seed: int, batches: int):
    """A row's batch as a Spark int column: ``pmod(xxhash64(columns..., seed), batches)``.

    The one rule for every batching: the TPC-H layouts, a prepared layout of the user's table and the
    batches hashed on the fly when a table is not prepared.
    """
    from pyspark.sql import functions as F

    return F.pmod(F.xxhash64(*columns, F.lit(seed)), F.lit(batches)).cast("int")


def batch_count(value, what: str = "batches") -> int:
    """``value`` as a batch count by :data:`BATCHES` (UsageError naming ``what`` otherwise)."""
    return BATCHES.check(value, what=what)


class QuerySpecError(SparkrmError, ValueError):
    """A progressive query spec is missing, malformed or inconsistent."""


@dataclass(frozen=True)
class Output:
    """One output column: a key, a total, or an expression over totals."""

    name: str
    expression: Expression | None = None  # None: the column of the same name

    @property
    def derived(self) -> bool:
        return self.expression is not None


@dataclass(frozen=True)
class QuerySpec:
    name: str
    sql: str
    keys: tuple[str, ...]
    outputs: tuple[Output, ...]
    order: tuple[tuple[str, bool], ...] = ()  # (column, descending)
    limit: int | None = None
    exact_groups: bool = False
    statics: tuple[tuple[str, str], ...] = ()  # (view name, SQL over whole tables)
    layout: str = "orders"  # a key of LAYOUTS
    attributes: tuple[str, ...] = ()  # output columns looked up by key after estimation
    attributes_sql: str | None = None  # the SQL they come from (the keys plus the attributes)
    description: str = ""
    path: Path | None = field(default=None, compare=False)
    # What a spec derived from a plain query (:mod:`.rewrite`) adds; hand specs leave them empty.
    kinds: tuple[tuple[str, str], ...] = ()  # (total, "min" | "max" | "set"): running, not summed
    having: Expression | None = None  # a predicate over the outputs, applied to each estimate
    nulls_first: tuple[bool, ...] = ()  # per @order item (empty: NULLs last, as pandas sorts)
    types: tuple[tuple[str, str], ...] = ()  # (output, Spark type): values are given that type
    hidden: tuple[str, ...] = ()  # outputs computed for ordering only, not shown
    derived: bool = False  # made by the rewriter: its partial query always groups by the batch
    constants: tuple[tuple[str, object], ...] = ()  # (name, value) the having predicate may use

    @property
    def by_batch(self) -> bool:
        """Whether the SQL returns and groups by the batch column, so one query can answer several
        batches (the shipped specs do; a spec that does not is run one batch per query)."""
        return self.derived or re.search(rf"\b{BATCH_COLUMN}\b", self.sql) is not None

    @property
    def sampled_tables(self) -> tuple[str, ...]:
        """The tables this spec reads a chunk of batches of (its layout's); it reads the others whole."""
        return tuple(LAYOUTS[self.layout])

    @property
    def aggregates(self) -> list[str]:
        """Output columns that are estimates (everything but the group keys and their attributes)."""
        return [o.name for o in self.outputs if o.name not in self.keys and o.name not in self.attributes
                and o.name not in self.hidden]

    @property
    def columns(self) -> list[str]:
        """The answer's columns (hidden ones left out)."""
        return [o.name for o in self.outputs if o.name not in self.hidden]

    @property
    def running(self) -> list[str]:
        """Output columns computed from a running (not summed) total, so without an interval."""
        kinds = dict(self.kinds)
        return [o.name for o in self.outputs if o.name in self.aggregates
                and any(n in kinds for n in (o.expression.names if o.derived else [o.name]))]

    def check_partials(self, partial_columns: list[str]) -> list[str]:
        """The total columns of the SQL's result; raises if an output names an unknown column."""
        missing = [k for k in self.keys if k not in partial_columns]
        if missing:
            raise QuerySpecError(f"{self.name}: @keys {missing} are not columns of its SQL result {partial_columns}")
        totals = [c for c in partial_columns if c not in self.keys]
        for o in self.outputs:
            if o.name in self.attributes:
                continue
            needed = o.expression.names if o.derived else [o.name]
            unknown = [n for n in needed if n not in totals and n not in self.keys]
            if unknown:
                raise QuerySpecError(f"{self.name}: output {o.name!r} uses {unknown}, which its SQL does not return "
                                     f"(it returns {partial_columns})")
            if o.derived and any(n in self.keys for n in o.expression.names):
                raise QuerySpecError(f"{self.name}: output {o.name!r} computes with a group key")
        return totals


def available() -> list[int]:
    """TPC-H query numbers with a shipped progressive spec."""
    return sorted(int(p.stem[1:]) for p in SPEC_DIR.glob("q[0-9][0-9].sql"))


def load(query) -> QuerySpec:
    """The spec of TPC-H query ``query`` (a number) or of the spec file at path ``query``."""
    if isinstance(query, int) or (isinstance(query, str) and query.isdigit()):
        path = SPEC_DIR / f"q{int(query):02d}.sql"
        if not path.is_file():
            raise QuerySpecError(f"TPC-H Q{int(query)} has no progressive spec; supported: "
                                 f"{', '.join(f'Q{n}' for n in available())}")
    else:
        path = Path(query)
        if not path.is_file():
            raise QuerySpecError(f"no progressive query spec at {path}")
    return parse(path.read_text(), name=path.stem, path=path)


def parse(text: str, name: str = "query", path: Path | None = None) -> QuerySpec:
    values, description, sql_lines, last = {}, [], [], None  # directive -> its values, in order
    for line in text.splitlines():
        m = _DIRECTIVE.match(line.strip())
        if m:
            last = m.group(1)
            values.setdefault(last, []).append(m.group(2).strip())
            continue
        m = _CONTINUATION.match(line)
        if m and last:
            values[last][-1] += " " + m.group(1).strip()
            continue
        last = None
        if line.strip().startswith("--"):
            if not sql_lines:
                description.append(line.strip().lstrip("-").strip())
        elif line.strip():
            sql_lines.append(line)
    statics = values.pop("static", [])  # the one directive that may repeat; of the others the last counts
    directives = {name: given[-1] for name, given in values.items()}
    unknown = set(directives) - {"keys", "output", "order", "limit", "groups", "batch-by", "attributes",
                                 "attributes-from"}
    if unknown:
        raise QuerySpecError(f"{name}: unknown directive(s) {sorted(unknown)}; known: @keys, @output, @order, "
                             "@limit, @groups, @batch-by, @attributes, @attributes-from, @static")
    if "output" not in directives:
        raise QuerySpecError(f"{name}: the spec needs an @output line")
    keys = tuple(_split(directives.get("keys", "")))
    outputs = tuple(_output(item, name) for item in _split(directives["output"]))
    names = [o.name for o in outputs]
    order = []
    for item in _split(directives.get("order", "")):
        column, _, direction = item.partition(" ")
        if column not in names or direction.strip().lower() not in ("", "asc", "desc"):
            raise QuerySpecError(f"{name}: @order item {item!r} must be an output column, optionally asc/desc")
        order.append((column, direction.strip().lower() == "desc"))
    limit = directives.get("limit")
    if limit is not None and not limit.isdigit():
        raise QuerySpecError(f"{name}: @limit must be a whole number, not {limit!r}")
    groups = directives.get("groups", "scaled")
    if groups not in ("scaled", "exact"):
        raise QuerySpecError(f"{name}: @groups is 'scaled' (default) or 'exact', not {groups!r}")
    attributes = tuple(_split(directives.get("attributes", "")))
    if bool(attributes) != bool(directives.get("attributes-from")):
        raise QuerySpecError(f"{name}: @attributes and @attributes-from go together (the columns, and the SQL "
                             "that gives them by key)")
    if attributes and (not set(attributes) <= set(names) or not keys):
        raise QuerySpecError(f"{name}: @attributes must be output columns of a query with @keys")
    layout = directives.get("batch-by", "orders")
    if layout not in LAYOUTS:
        raise QuerySpecError(f"{name}: @batch-by is one of {', '.join(LAYOUTS)}, not {layout!r}")
    return QuerySpec(name=name, sql="\n".join(sql_lines), keys=keys, outputs=outputs, order=tuple(order),
                     limit=int(limit) if limit else None, exact_groups=groups == "exact",
                     statics=tuple(_static(item, name) for item in statics), layout=layout,
                     attributes=attributes, attributes_sql=directives.get("attributes-from"),
                     description=" ".join(description), path=path)


def _split(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _static(item: str, spec: str) -> tuple[str, str]:
    view, eq, sql = item.partition("=")
    view = view.strip()
    if not eq or not view.isidentifier() or not sql.strip():
        raise QuerySpecError(f"{spec}: @static {item[:40]!r} must be `view_name = select ...`")
    return view, sql.strip()


def _output(item: str, spec: str) -> Output:
    name, eq, expr = item.partition("=")
    name = name.strip()
    if not name.isidentifier():
        raise QuerySpecError(f"{spec}: output {item!r} must be `name` or `name = expression`")
    if not eq:
        return Output(name)
    try:
        return Output(name, Expression(expr))
    except ValueError as e:
        raise QuerySpecError(f"{spec}: output {name!r}: {e}") from None
