"""Derive a progressive query spec from Spark's analysis of a plain aggregate query (no py4j here).

Given the analyzed plan (:mod:`.sqlplan` trees), :func:`derive` finds what a hand-written spec states:

* the top ``Aggregate`` (only HAVING filters, projections, ORDER BY and LIMIT may sit above it) and its
  grouping keys; non-aggregate outputs of the aggregate (functions of the keys) become keys as well;
* each aggregate function as partial totals per batch: SUM and COUNT as themselves, AVG as SUM / COUNT,
  VARIANCE/STDDEV (sample and population) from SUM, SUM of squares and COUNT: additive, scaled by the
  inverse fraction processed, with intervals; MIN, MAX and COUNT(DISTINCT) as running values without an
  interval (COUNT(DISTINCT) of the batching key is additive: each value lies in one batch);
* arithmetic over aggregates (``sum(a) / count(*)``), HAVING, ORDER BY (with its NULL order) and LIMIT,
  applied to the estimate after each batch;
* the fact table: the largest relation whose rows reach the aggregate one for one (through projections,
  filters, inner joins, the preserved side of outer joins and the left side of semi and anti joins), so
  that the aggregate's input is the disjoint union of its input over the batches of that table and every
  total of the last batch is exact; every other table is read whole;
* the batching key: the column the fact's subqueries or inner aggregates need, else its equi-join key
  with the largest other table when that table is not tiny beside it, so that groups on that key (or one
  equal to it through an inner join) are complete within a batch and reported as they are
  (``exact_groups``); else its first whole-number column (hashing every column of a wide table cost 5x
  the plain query on TPC-H Q1), else a hash of the whole row.

Whatever it cannot answer this way raises :class:`NotProgressive` with the reason, and the query runs
exactly in one step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .expressions import Expression
from .spec import Output, QuerySpec

_LIMITS = {"GlobalLimit", "LocalLimit"}
_ABOVE = {"Filter", "Project", "Sort", "SubqueryAlias"} | _LIMITS
_PASS = {"Project", "Filter", "SubqueryAlias", "View"}
_ARITHMETIC = {"Add": "+", "Subtract": "-", "Multiply": "*", "Divide": "/"}
_COMPARE = {"EqualTo": "==", "LessThan": "<", "LessThanOrEqual": "<=", "GreaterThan": ">",
            "GreaterThanOrEqual": ">="}
_VARIANCES = {"VarianceSamp", "VariancePop", "StddevSamp", "StddevPop"}
_NUMERIC = ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal")
_INTEGRAL = ("tinyint", "smallint", "int", "bigint")


#: A join key is the batching key only when its table is at least 1/KEY_TABLE_SHARE of the fact table's size.
KEY_TABLE_SHARE = 50


class NotProgressive(Exception):
    """The query cannot be answered batch by batch; the message says why (it runs exactly instead)."""


@dataclass(frozen=True)
class Partial:
    """One per-batch total of the partial query: ``function`` of ``argument`` over a batch's rows."""

    name: str
    function: str  # sum, count, count_star, sum_double, sum_squares, min, max, collect_set, count_distinct
    argument: object = None  # sqlplan.Expr, None for COUNT(*)


@dataclass(frozen=True)
class DependentKeys:
    """Group keys that are columns of one table beside a whole-number key column of the same table (a
    customer's name, address and comment beside its ``c_custkey``). If that column is unique in the table
    (the engine asks Spark, :mod:`.unique`), the others are functions of it: the partial query leaves them out
    of its groups, and they are looked up for the answer's rows only. TPC-H Q10 groups by seven customer
    columns: without the five long ones in its groups, its exact answer at SF 10 came at 1.5x the plain
    query instead of 2.0x."""

    leaf: object  # the table (sqlplan.Node)
    key: tuple  # (label, sqlplan.Expr) of the column that determines the others
    attributes: tuple  # ((label, sqlplan.Expr), ...) the keys it determines


@dataclass
class Derivation:
    """Everything the engine needs to run a plain query progressively."""

    spec: QuerySpec
    aggregate: object  # the top Aggregate (sqlplan.Node); the partial query reads its child
    fact: object  # the leaf to batch (sqlplan.Node)
    fact_path: tuple  # child indices from the aggregate's child down to the fact leaf
    batch_key: list  # attributes (sqlplan.Expr) of the fact leaf hashed into a batch ([]: the whole row)
    keys: list  # (partial column name, sqlplan.Expr) the partial query groups by, besides the batch
    partials: list  # Partial
    labels: list  # the answer's column names, in order
    notes: list = field(default_factory=list)
    #: Filters on the fact's path whose subqueries read the fact table again, correlated on the batching key:
    #: (depth of the Filter on ``fact_path``, the fact leaves inside its subqueries). Those reads are batched
    #: alike, which keeps the subquery exact for every row that reaches the aggregate.
    subquery_sites: list = field(default_factory=list)
    #: (name, sqlplan.Expr) of uncorrelated scalar subqueries in HAVING or the projections above the aggregate:
    #: the engine computes each once (over whole tables) and binds its value to the name in ``spec.constants``.
    constants: list = field(default_factory=list)
    #: (leaf, attribute) of other tables that may be read by the same batches as the fact table (see
    #: :func:`_co_batched`): a prepared layout of one by that attribute is read a chunk's batches at a time
    #: instead of whole.
    co_batched: list = field(default_factory=list)
    #: Depths (on ``fact_path``) of the Filters whose subqueries read co-batched tables (see
    #: :func:`_co_batched_in_subqueries`): their conditions are rebuilt with those reads replaced.
    co_batched_filters: list = field(default_factory=list)
    #: The analyzed plan it was derived from (every table the query reads is a leaf of it).
    plan: object = None
    #: Keys that may be looked up instead of grouped by, once their table's key is known to be unique.
    dependent_keys: list = field(default_factory=list)
    #: The DependentKeys in use (:meth:`looking_up`): its attributes are the spec's ``attributes``.
    lookup: DependentKeys | None = None

    def looking_up(self, dependent: DependentKeys) -> "Derivation":
        """This derivation without ``dependent``'s attributes in its groups: they are looked up by its key."""
        import dataclasses

        labels = {label for label, _ in dependent.attributes}
        spec = dataclasses.replace(self.spec, keys=tuple(k for k in self.spec.keys if k not in labels),
                                   attributes=tuple(label for label, _ in dependent.attributes))
        return dataclasses.replace(self, spec=spec, keys=[(n, e) for n, e in self.keys if n not in labels],
                                   lookup=dependent)

    @property
    def fact_name(self) -> str:
        return describe(self.fact)


def describe(leaf) -> str:
    """A leaf's table as a user would name it."""
    source = leaf.source
    if source.startswith(("files:", "table:")):
        return source.split(":", 1)[1]
    return leaf.text[:80]


def derive(plan, name: str = "query", batch_key=None) -> Derivation:
    """The progressive form of the analyzed plan ``plan`` (a sqlplan.Node); ``batch_key`` (column names of
    the fact table) imposes the batching key, e.g. a prepared layout's, instead of choosing one.

    Raises
    ------
    NotProgressive
        Naming what the rewrite does not support.
    """
    above, aggregate = _top_aggregate(plan)
    builder = _Builder()
    builder.aggregate(aggregate)
    env, order, nulls, limit, having = builder.above(above, aggregate)
    fact, path, groups, others = _fact(aggregate)
    if others and batch_key is None:  # batch by the column the subqueries correlate on
        batch_key = _correlation_columns(aggregate, others)
    key, classes = _batch_key(aggregate.children[0], fact, path, batch_key)
    if groups:
        key, classes = _grouped_key(aggregate.children[0], fact, path, groups, key, classes, batch_key)
    sites, whole_reads = _subquery_sites(aggregate.children[0], path, fact, others, key, classes)
    builder.key_class = {a for a in classes}
    builder.finish_partials()
    labels, outputs, hidden = [], [], []
    used = set()
    for attribute in plan.output:
        column = env[attribute.id]
        label = _unique(attribute.name, used)
        labels.append(label)
        outputs.append((label, column))
    spec_outputs, keys_shown = [], {}
    for label, column in outputs:
        if column.key is not None:
            keys_shown.setdefault(column.key, label)
    renamed_keys = {k: keys_shown.get(k, k) for k in builder.key_names}
    for label, column in outputs:
        if column.key is not None:
            spec_outputs.append(Output(label) if keys_shown[column.key] == label
                                else Output(label, Expression(renamed_keys[column.key])))
        else:
            spec_outputs.append(Output(label, Expression(column.text)))
    for hname, column in builder.hidden:
        if column.key is None:
            spec_outputs.append(Output(hname, Expression(column.text)))
            hidden.append(hname)
    if any(o.derived and any(n in renamed_keys.values() for n in o.expression.names) for o in spec_outputs):
        raise NotProgressive("a group key is shown under two names; select it once")
    rename = dict(renamed_keys)
    order = tuple((rename.get(c, c), desc) for c, desc in order)
    having_text = having
    for old, new in rename.items():
        if old != new and having_text:
            having_text = _rename(having_text, old, new)
    exact_groups = any(e.kind == "AttributeReference" and e.id in classes for _, e in builder.keys)
    kinds = tuple((p.name, p.function if p.function in ("min", "max") else "set")
                  for p in builder.partials if p.function in ("min", "max", "collect_set"))
    running = [lab for lab, col in outputs if col.key is None and col.running]
    notes = []
    if running:
        notes.append(f"{', '.join(running)}: running value(s) (MIN, MAX or COUNT DISTINCT), no interval")
    if exact_groups:
        notes.append("groups lie whole in one batch (grouped by the batching key): each is exact once seen")
    if having_text:
        notes.append("HAVING is applied to the estimate: a group near its threshold may still change side")
    spec = QuerySpec(name=name, sql="", keys=tuple(renamed_keys[k] for k in builder.key_names),
                     outputs=tuple(spec_outputs), order=order, limit=limit, exact_groups=exact_groups,
                     layout="", derived=True, kinds=kinds, having=Expression(having_text) if having_text else None,
                     nulls_first=tuple(nulls), types=tuple((label, col.dtype) for label, col in outputs
                                                           if col.key is None) + tuple(
                         (h, c.dtype) for h, c in builder.hidden if c.key is None),
                     hidden=tuple(hidden), description="derived from Spark's analyzed plan")
    keys = [(renamed_keys[k], e) for k, e in zip(builder.key_names, [e for _, e in builder.keys])]
    if sites:
        notes.append(f"subqueries over {describe(fact)} read the same batches (correlated on the batching key)")
    if whole_reads:
        notes.append(f"{describe(fact)} is also read whole {whole_reads} time(s) per Spark query (a self-join or a "
                     "subquery not correlated on the batching key): exact, but slower")
    in_subqueries = _co_batched_in_subqueries(aggregate.children[0], path, fact, key, classes)
    return Derivation(spec, aggregate, fact, path, key, keys, builder.partials, labels, notes, sites,
                      builder.constants,
                      _co_batched(aggregate.children[0], fact, key, classes) + [(l, a) for _, l, a in in_subqueries],
                      sorted({depth for depth, _, _ in in_subqueries}), plan,
                      _dependent_keys(aggregate.children[0], fact, keys, spec))


#: Attributes are looked up only for answers of at most this many rows (a lookup filters on their keys).
LOOKUP_LIMIT = 1000
#: Operators through which a table's columns reach the aggregate as the table holds them, row by row (not a
#: Union, whose output carries its first child's attribute ids over the other children's rows too).
_KEEPING = _PASS | _LIMITS | {"Join", "Aggregate", "Sort", "Distinct", "Deduplicate"}


def _kept_leaves(node):
    """The relation leaves under ``node`` reached through :data:`_KEEPING` operators only."""
    if not node.children:
        yield node
    elif node.kind in _KEEPING:
        for child in node.children:
            yield from _kept_leaves(child)


def _dependent_keys(child, fact, keys, spec) -> list:
    """:class:`DependentKeys` candidates, one per table other than the fact with a whole-number key column and
    other key columns that only the answer shows (not ordered by, not in HAVING or arithmetic), in a limited
    answer ranked first by an aggregate: the engine then reads, once per Spark query, the attributes of the
    groups its batches may rank in the answer (ranked by a key, TPC-H Q18's ``o_totalprice``, it read them at
    nearly every snapshot: 0.97x -> 1.18x the plain query at SF 10)."""
    if spec.limit is None or spec.limit > LOOKUP_LIMIT or not spec.order or spec.order[0][0] in dict(keys):
        return []  # ranked by a key, the answer's groups cannot be foreseen per chunk: a lookup every snapshot
    used = {c for c, _ in spec.order} | set(spec.having.names if spec.having else ())
    used |= {n for o in spec.outputs if o.derived for n in o.expression.names}
    plain = {o.name for o in spec.outputs if not o.derived and o.name not in spec.hidden}
    candidates = []
    for leaf in (n for n in _kept_leaves(child) if n is not fact):
        ids = {a.id for a in leaf.output}
        mine = [(label, e) for label, e in keys if e.kind == "AttributeReference" and e.id in ids]
        determinant = next(((label, e) for label, e in mine if e.dtype in _INTEGRAL), None)
        if determinant is None:
            continue
        dependent = tuple((label, e) for label, e in mine
                          if label != determinant[0] and label in plain and label not in used)
        if dependent:
            candidates.append(DependentKeys(leaf, determinant, dependent))
    return candidates


def _co_batched(child, fact, key, classes) -> list:
    """Other tables whose rows can be restricted to a chunk's batches by hashing one of their columns.

    A leaf qualifies when it has an attribute equal to the batching key on every row that reaches the
    aggregate (in the key's class, of the key's type, so it hashes alike) and is reached from the
    aggregate's input through projections, filters, inner joins and aggregates grouped by the key: its rows
    whose attribute hashes to another batch join only fact rows of that other batch, which the chunk leaves
    out anyway. The null-supplying side of an outer join qualifies through the join's own equalities with the
    key: a row there whose attribute hashes elsewhere matches no kept row. (Under a window, or an aggregate not
    grouped by the key, dropping rows could change what the others see.) TPC-H: orders by ``o_orderkey``
    beside lineitem batched by ``l_orderkey``; a self-join's other side by the same key; orders by
    ``o_custkey`` left-joined to customers batched by ``c_custkey`` (Q13).
    """
    if len(key) != 1:
        return []
    found = []

    def visit(node, cls):
        if not node.children:
            same = [a for a in node.output if a.id in cls and a.dtype == key[0].dtype]
            if node is not fact and same:
                found.append((node, same[0]))
            return
        if node.kind in _PASS or (node.kind == "Join" and node.join_type in ("Inner", "Cross")):
            for c in node.children:
                visit(c, cls)
        elif node.kind == "Aggregate" and any(e.id in cls for e in node.exprs[:node.groups]):
            visit(node.children[0], cls)
        elif node.kind == "Join" and node.join_type in ("LeftOuter", "RightOuter") and node.exprs:
            kept, supplied = (0, 1) if node.join_type == "LeftOuter" else (1, 0)
            visit(node.children[kept], cls)
            joined = set(cls)
            for a, b in _equalities(node.exprs[0]):
                joined |= {a.id, b.id} if (a.id in cls or b.id in cls) else set()
            visit(node.children[supplied], joined)

    visit(child, classes)
    return found


def _co_batched_in_subqueries(child, path, fact, key, classes) -> list:
    """Other tables read in subqueries of the filters on the fact's path whose rows can be restricted to a
    chunk's batches: (depth of the Filter on ``path``, leaf, attribute) for each read whose rows reach a
    filter ``attribute = outer(a)`` in its subquery, with ``a`` equal to the batching key and ``attribute`` of
    the key's type. Only the subquery rows with ``attribute`` equal to an outer row's key decide that row's
    EXISTS, IN or scalar value, and they hash to the outer row's batch. TPC-H: lineitem by ``l_orderkey`` in
    Q4's EXISTS over orders; orders by ``o_custkey`` in Q22's NOT EXISTS over customers."""
    if len(key) != 1:
        return []
    found = []
    for depth, node in _path_filters(child, path):
        for e in node.exprs[0].walk():
            for plan in e.plans:
                for read in (n for n in _tree(plan) if not n.children and n.source != fact.source):
                    attribute = _correlated(plan, read, lambda a: a.dtype == key[0].dtype, classes)
                    if attribute is not None:
                        found.append((depth, read, attribute))
    return found


def _path_filters(child, path):
    """(depth, node) of each Filter from ``child`` down ``path`` (child indices) to the leaf, the leaf's
    depth included: the filters whose subqueries may read by the fact's batches."""
    node = child
    for depth, step in enumerate(path + (None,)):
        if node.kind == "Filter":
            yield depth, node
        if step is not None:
            node = node.children[step]


def _rename(text: str, old: str, new: str) -> str:
    import re

    return re.sub(rf"\b{re.escape(old)}\b", new, text)


def _unique(label: str, used: set) -> str:
    out, n = label, 2
    while out in used:
        out, n = f"{label}_{n}", n + 1
    used.add(out)
    return out


def _top_aggregate(plan):
    """The operators above the top Aggregate (top first) and the Aggregate."""
    above, node = [], plan
    while node.kind != "Aggregate":
        if node.kind not in _ABOVE:
            inner = any(n.kind == "Aggregate" for n in node.walk())
            if inner:
                raise NotProgressive(f"its aggregate sits under a {node.kind} ({node.text[:60]}); only HAVING, "
                                     "ORDER BY, LIMIT and projections may follow the aggregate")
            raise NotProgressive("it has no aggregate (GROUP BY or aggregate function) to estimate")
        above.append(node)
        node = node.children[0]
    if not any(e.kind == "AggregateExpression" for e in _aggregate_exprs(node) for e in e.walk()):
        raise NotProgressive("its GROUP BY computes no aggregate function (a set of groups has no estimate)")
    return above, node


def _aggregate_exprs(aggregate):
    return aggregate.exprs[aggregate.groups:]


@dataclass
class _Column:
    """A column above the aggregate: a key, or arithmetic over totals (Expression text)."""

    key: str | None = None
    text: str = ""
    dtype: str = ""
    running: bool = False  # computed from a MIN, MAX or COUNT DISTINCT
    names: frozenset = frozenset()


class _Builder:
    def __init__(self):
        self.keys: list = []  # (name, Expr)
        self.key_names: list = []
        self._key_by_canon: dict = {}
        self.partials: list = []
        self._partial_by: dict = {}
        self.hidden: list = []  # (name, _Column) for ORDER BY / HAVING expressions not shown
        self.key_class: set = set()
        self._distinct: list = []  # (Partial index, Expr) of COUNT(DISTINCT x), decided once the key is known
        self.constants: list = []  # (name, Expr) of uncorrelated scalar subqueries above the aggregate

    # -- the aggregate ---------------------------------------------------------------------------
    def key(self, e) -> str:
        from .sqlplan import canonical

        c = canonical(e)
        if c not in self._key_by_canon:
            if not e.jvm.deterministic():
                raise NotProgressive(f"group key {e.text} is not deterministic")
            name = f"_k{len(self.keys)}"
            self._key_by_canon[c] = name
            self.keys.append((name, e))
            self.key_names.append(name)
        return self._key_by_canon[c]

    def partial(self, function: str, argument=None) -> str:
        from .sqlplan import canonical

        ident = (function, canonical(argument) if argument is not None else None)
        if ident not in self._partial_by:
            name = f"_t{len(self.partials)}"
            self._partial_by[ident] = name
            self.partials.append(Partial(name, function, argument))
        return self._partial_by[ident]

    def aggregate(self, aggregate) -> None:
        self.env = {}
        for g in aggregate.exprs[:aggregate.groups]:
            self.key(g)
        for e in _aggregate_exprs(aggregate):
            inner = e.children[0] if e.kind == "Alias" else e
            if any(x.kind == "AggregateExpression" for x in inner.walk()):
                self.env[e.id] = self.over_totals(inner)
            else:
                self.env[e.id] = _Column(key=self.key(inner))

    def over_totals(self, e) -> _Column:
        """The column of an expression over aggregate functions."""
        text, running = self._total_text(e)
        return _Column(text=text, dtype=e.dtype, running=running)

    def _total_text(self, e):
        if e.kind == "AggregateExpression":
            return self._function(e)
        if e.kind in _ARITHMETIC:
            (a, ra), (b, rb) = (self._total_text(c) for c in e.children)
            return f"({a} {_ARITHMETIC[e.kind]} {b})", ra or rb
        if e.kind == "UnaryMinus":
            a, ra = self._total_text(e.children[0])
            return f"(-{a})", ra
        if e.kind == "Sqrt":
            a, ra = self._total_text(e.children[0])
            return f"sqrt({a})", ra
        if e.kind == "Cast":
            child = e.children[0]
            if not (e.dtype.startswith(_NUMERIC) and child.dtype.startswith(_NUMERIC)):
                raise NotProgressive(f"cast {e.text[:60]} over an aggregate is not numeric")
            if e.dtype.startswith(_INTEGRAL) and not child.dtype.startswith(_INTEGRAL):
                raise NotProgressive(f"{e.text[:60]} truncates an aggregate to a whole number")
            return self._total_text(child)
        if e.kind == "Literal" and isinstance(e.value, (int, float)) and not isinstance(e.value, bool):
            return repr(e.value), False
        if e.kind == "Literal" and e.dtype.startswith("decimal") and e.value is not None:
            return str(e.value), False
        if e.kind == "AttributeReference":
            raise NotProgressive(f"{e.name} is combined with aggregates in one expression; compute it apart")
        raise NotProgressive(f"{e.kind} ({e.text[:60]}) over aggregates is not supported progressively")

    def _function(self, e):
        if e.has_filter:
            raise NotProgressive(f"{e.text[:60]}: aggregates with FILTER (WHERE ...) are not supported yet")
        f = e.children[0]
        args = f.children
        kind = f.kind
        if kind == "Count":
            if e.distinct:
                if len(args) != 1:
                    raise NotProgressive("COUNT(DISTINCT ...) of several columns is not supported")
                name = self.partial("collect_set", args[0])
                self._distinct.append((name, args[0]))
                return name, True
            if len(args) == 1 and args[0].kind == "Literal" and args[0].value is not None:
                return self.partial("count_star"), False
            if len(args) != 1:
                raise NotProgressive("COUNT of several columns is not supported")
            return self.partial("count", args[0]), False
        if e.distinct and kind not in ("Min", "Max"):
            raise NotProgressive(f"{kind.upper()}(DISTINCT ...) has no progressive form")
        if kind == "Sum":
            return self.partial("sum", args[0]), False
        if kind == "Average":
            return f"({self.partial('sum', args[0])} / {self.partial('count', args[0])})", False
        if kind in _VARIANCES:
            s, q, n = (self.partial("sum_double", args[0]), self.partial("sum_squares", args[0]),
                       self.partial("count", args[0]))
            denominator = f"({n} - 1)" if kind.endswith("Samp") else n
            variance = f"(({q} - {s} * {s} / {n}) / {denominator})"
            return (f"sqrt({variance})" if kind.startswith("Stddev") else variance), False
        if kind in ("Min", "Max"):
            return self.partial(kind.lower(), args[0]), True
        raise NotProgressive(f"aggregate function {kind} ({e.text[:60]}) is not supported progressively")

    def finish_partials(self) -> None:
        """COUNT(DISTINCT x) of the batching key (or a column equal to it) counts each value in one batch
        only: an additive total, estimated with an interval, instead of a set of every value."""
        for name, argument in self._distinct:
            if argument.kind == "AttributeReference" and argument.id in self.key_class:
                i = next(i for i, p in enumerate(self.partials) if p.name == name)
                self.partials[i] = Partial(name, "count_distinct", argument)

    # -- the operators above it ------------------------------------------------------------------
    def above(self, operators, aggregate):
        """Apply HAVING, projections, ORDER BY and LIMIT (bottom up); the environment and their spec."""
        env = dict(self.env)
        order, nulls, limit, having = (), (), None, []
        seen_limit = seen_sort = False
        for op in reversed(operators):
            if op.kind == "Filter":
                if seen_limit:
                    raise NotProgressive("a filter after LIMIT is not supported progressively")
                having.append(self._predicate(op.exprs[0], env))
            elif op.kind == "Project":
                new = {}
                for e in op.exprs:
                    if e.kind == "AttributeReference":
                        new[e.id] = env[e.id]
                    elif e.kind == "Alias" and e.children[0].kind == "AttributeReference" \
                            and e.children[0].id in env:
                        new[e.id] = env[e.children[0].id]
                    elif e.kind == "Alias":
                        new[e.id] = self._over_columns(e.children[0], env)
                    else:
                        raise NotProgressive(f"projection {e.text[:60]} is not supported progressively")
                env = {**env, **new}
            elif op.kind == "Sort":
                if seen_limit:
                    raise NotProgressive("ORDER BY after LIMIT is not supported progressively")
                items, flags = [], []
                for s in op.exprs:
                    direction, nulls_first = s.detail
                    items.append((self._column_name(s.children[0], env), direction == "desc"))
                    flags.append(nulls_first)
                order, nulls, seen_sort = tuple(items), tuple(flags), True
            elif op.kind in _LIMITS:
                value = op.exprs[0].value
                if not isinstance(value, int):
                    raise NotProgressive("LIMIT is not a constant")
                limit = value if limit is None else min(limit, value)
                seen_limit = True
        del seen_sort
        return env, order, nulls, limit, " and ".join(f"({h})" for h in having) or None

    def _column_name(self, e, env) -> str:
        """The name of a column to order by: a key, or a (hidden) output over totals."""
        if e.kind == "AttributeReference" and e.id in env and env[e.id].key is not None:
            return env[e.id].key
        column = env[e.id] if e.kind == "AttributeReference" and e.id in env else self._over_columns(e, env)
        if column.key is not None:
            return column.key
        name = f"_h{len(self.hidden)}"
        self.hidden.append((name, column))
        return name

    def _over_columns(self, e, env) -> _Column:
        """An expression above the aggregate: arithmetic over its outputs (no keys)."""
        text, running = self._above_text(e, env, allow_keys=False)
        return _Column(text=text, dtype=e.dtype, running=running)

    def _above_text(self, e, env, allow_keys: bool):
        if e.kind == "AttributeReference":
            if e.id not in env:
                raise NotProgressive(f"{e.name} is not an output of the aggregate")
            column = env[e.id]
            if column.key is not None:
                if not allow_keys:
                    raise NotProgressive(f"an expression over group key {e.name} above the aggregate is not "
                                         "supported progressively; compute it in the aggregate's SELECT")
                return column.key, False
            return column.text, column.running
        if e.kind in _ARITHMETIC:
            (a, ra), (b, rb) = (self._above_text(c, env, allow_keys) for c in e.children)
            return f"({a} {_ARITHMETIC[e.kind]} {b})", ra or rb
        if e.kind == "UnaryMinus":
            a, ra = self._above_text(e.children[0], env, allow_keys)
            return f"(-{a})", ra
        if e.kind == "Cast":
            return self._above_text(e.children[0], env, allow_keys)
        if e.kind == "Literal":
            if isinstance(e.value, (int, float, str)) and not isinstance(e.value, bool):
                return repr(e.value), False
            if e.dtype.startswith("decimal") and e.value is not None:
                return str(e.value), False
            raise NotProgressive(f"literal {e.text} ({e.dtype}) is not supported above the aggregate")
        if e.kind == "AggregateExpression":
            raise NotProgressive("an aggregate outside the aggregate's SELECT")
        if e.kind == "ScalarSubquery" and e.plans and not _correlated_anywhere(e.plans[0]):
            name = f"_c{len(self.constants)}"  # computed once, exactly, before the first batch
            self.constants.append((name, e))
            return name, False
        raise NotProgressive(f"{e.kind} ({e.text[:60]}) above the aggregate is not supported progressively")

    def _predicate(self, e, env) -> str:
        if e.kind == "And":
            return f"({self._predicate(e.children[0], env)}) and ({self._predicate(e.children[1], env)})"
        if e.kind == "Or":
            return f"({self._predicate(e.children[0], env)}) or ({self._predicate(e.children[1], env)})"
        if e.kind == "Not":
            return f"not ({self._predicate(e.children[0], env)})"
        if e.kind in _COMPARE:
            a, _ = self._above_text(e.children[0], env, allow_keys=True)
            b, _ = self._above_text(e.children[1], env, allow_keys=True)
            return f"{a} {_COMPARE[e.kind]} {b}"
        if e.kind == "IsNotNull":
            return f"{self._above_text(e.children[0], env, allow_keys=True)[0]} is not None"
        if e.kind == "IsNull":
            return f"{self._above_text(e.children[0], env, allow_keys=True)[0]} is None"
        raise NotProgressive(f"HAVING condition {e.kind} ({e.text[:60]}) is not supported progressively")


# -- the fact table and its batching key -------------------------------------------------------------
def _linear_leaves(node, path=(), groups=()):
    """Leaves whose rows reach ``node``'s output one for one (see the module docstring), with their paths and
    the grouping attribute ids of each inner aggregate on the way: an aggregate grouped by the batching key
    (each group whole in one batch) passes its groups on one for one, so the outer aggregate stays exact."""
    if not node.children:
        from .sqlplan import RELATIONS

        if node.kind in RELATIONS:
            yield node, path, groups
        return
    if node.kind in _PASS:
        yield from _linear_leaves(node.children[0], path + (0,), groups)
    elif node.kind == "Aggregate":
        grouping = frozenset(e.id for e in node.exprs[:node.groups] if e.kind == "AttributeReference")
        if grouping:
            yield from _linear_leaves(node.children[0], path + (0,), groups + (grouping,))
    elif node.kind == "Join":
        sides = {"Inner": (0, 1), "Cross": (0, 1), "LeftOuter": (0,), "LeftSemi": (0,), "LeftAnti": (0,),
                 "RightOuter": (1,)}.get(node.join_type, ())
        for side in sides:
            yield from _linear_leaves(node.children[side], path + (side,), groups)


def _fact(aggregate):
    """The leaf to batch, its path from the aggregate's child, the grouping attributes of the inner aggregates
    on that path, and the other reads of the same table."""
    child = aggregate.children[0]
    candidates = list(_linear_leaves(child))
    if not candidates:
        raise NotProgressive("no table reaches the aggregate row for row (each is under a window, union, an "
                             "aggregate without groups or the null side of an outer join), so none can be sampled")
    fact, path, groups = max(candidates, key=lambda c: c[0].size)
    others = [n for n in aggregate.walk() if not n.children and n.source == fact.source and n is not fact]
    return fact, path, groups, others


def _grouped_key(child, fact, path, groups, key, classes, forced):
    """The batching key and its class once every inner aggregate on the path groups by it (re-chosen as the
    fact column they all group by, when the first choice is not)."""
    if all(g & classes for g in groups):
        return key, classes
    common = [a for a in fact.output if all(a.id in g for g in groups)]
    if forced is None and common:
        key, classes = _batch_key(child, fact, path, [common[0].name])
        if all(g & classes for g in groups):
            return key, classes
    raise NotProgressive(f"an aggregate under the top one does not group by the batching key of "
                         f"{describe(fact)} ({', '.join(a.name for a in key) or 'none'}), so its groups span batches")


def _correlations(plan):
    """(inner attribute, outer attribute) of the equalities ``inner = outer(...)`` in a subquery's filters."""
    for node in plan.walk():
        if node.kind == "Filter":
            for a, b in _equalities(node.exprs[0], outer=True):
                yield a, b


def _correlation_columns(aggregate, others):
    """The fact column every other read is correlated on (by name), when there is one."""
    holders: dict = {}  # id() of a leaf -> the subquery plans holding it
    for node in aggregate.walk():
        for e in node.exprs:
            for plan in (p for sub in e.walk() for p in sub.plans):
                for leaf in plan.walk():
                    holders.setdefault(id(leaf), []).append(plan)
    names = None
    for read in others:
        ids = {a.id: a.name for a in read.output}
        found = {ids[a.id] for plan in holders.get(id(read), []) for a, _ in _correlations(plan) if a.id in ids}
        names = found if names is None else names & found
    return sorted(names)[:1] if names else None


def _subquery_sites(child, path, fact, others, key, classes):
    """Which other reads of the fact table read the same batches (see :attr:`Derivation.subquery_sites`), and
    how many are read whole.

    Any read other than the batched one may be read whole: the aggregate's input is linear in the batched read
    alone, so the union over batches is the plain input (a self-join's other side, an uncorrelated subquery
    such as an average over the whole table, are then exact in every batch, at the cost of a whole read per
    Spark query). A read in a subquery of a filter on the fact's path reads the same batches instead when each
    of its rows is filtered by ``inner key = outer(a)``, or it is an ``a IN (subquery returning the key)``,
    with ``a`` equal to the batching key on every row that reaches the aggregate."""
    if not others or len(key) != 1:
        return [], len(others)
    remaining, sites = {id(o) for o in others}, []
    for depth, node in _path_filters(child, path):
        reads = []
        tested = {id(x.children[-1]): x.children[:-1] for x in node.exprs[0].walk() if x.kind == "InSubquery"}
        for e in node.exprs[0].walk():
            for plan in e.plans:
                for read in (n for n in _tree(plan) if not n.children and id(n) in remaining):
                    values = tested.get(id(e), ())
                    keyed_in = (len(values) == 1 and values[0].kind == "AttributeReference"
                                and values[0].id in classes and _keyed_output(plan, read, key[0].name))
                    if keyed_in or _correlated(plan, read, lambda a: a.name == key[0].name, classes):
                        reads.append(read)
                        remaining.discard(id(read))
        if reads:
            sites.append((depth, reads))
    return sites, len(remaining)


def _keyed_output(plan, read, key_name: str) -> bool:
    """Whether ``plan`` (an IN subquery's) returns ``read``'s key column, each value computed from that key's
    rows only: the column passed up through projections, filters and inner joins, and through aggregates
    only as one of their groups (so ``x IN (select key ... group by key having ...)`` over a batch gives the
    plain answer for every ``x`` of that batch)."""
    if len(plan.output) != 1:
        return False
    target, node = plan.output[0].id, plan
    while node is not read:
        if node.kind in ("Project", "Aggregate"):
            named = node.exprs if node.kind == "Project" else node.exprs[node.groups:]
            e = next((x for x in named if x.id == target), None)
            if e is not None and e.kind == "Alias" and e.children[0].kind == "AttributeReference":
                target = e.children[0].id
            elif e is None or e.kind != "AttributeReference":
                return False
            if node.kind == "Aggregate" and target not in {x.id for x in node.exprs[:node.groups]}:
                return False
        elif not (node.kind in ("Filter", "SubqueryAlias", "View")
                  or (node.kind == "Join" and node.join_type in ("Inner", "Cross"))):
            return False
        below = [c for c in node.children if any(n is read for n in _tree(c))]
        if len(below) != 1:
            return False
        node = below[0]
    return any(a.id == target and a.name == key_name for a in read.output)


def _correlated_anywhere(plan) -> bool:
    """Whether a subquery plan refers to its outer query anywhere."""
    return any(x.kind == "OuterReference" for n in plan.walk() for e in n.exprs for x in e.walk())


def _tree(plan):
    """A plan's operators through their children only (not into subqueries of their expressions)."""
    yield plan
    for c in plan.children:
        yield from _tree(c)


def _correlated(plan, read, which, classes):
    """The attribute of ``read`` (one that ``which`` accepts) whose rows reach a filter ``attribute =
    outer(a)`` with ``a`` in ``classes``, or None."""
    inner = {a.id: a for a in read.output if which(a)}
    for node in _tree(plan):
        if node.kind == "Filter" and any(read is leaf for leaf, _, g in _linear_leaves(node) if not g):
            for a, b in _equalities(node.exprs[0], outer=True):
                if a.id in inner and b.id in classes:
                    return inner[a.id]
    return None


def _batch_key(child, fact, path, forced=None):
    """The fact's attributes to hash into batches, and the ids of attributes equal to the key on every row
    that reaches the aggregate (through filters and inner equi-joins on the path): grouping by one of them
    keeps each group whole in one batch."""
    fact_ids = {a.id for a in fact.output}
    size_of = {a.id: leaf.size for leaf in child.walk() if not leaf.children for a in leaf.output}
    pairs = []  # (fact attribute, size of the table it is joined with)
    equal: list = []
    node = child
    for step in path:
        holds = node.kind == "Filter" or (node.kind == "Join" and node.join_type in ("Inner", "Cross"))
        if node.kind in ("Filter", "Join") and node.exprs:
            for a, b in _equalities(node.exprs[0]):
                if holds:
                    equal.append((a.id, b.id))
                if (a.id in fact_ids) != (b.id in fact_ids):
                    key, other = (a, b) if a.id in fact_ids else (b, a)
                    pairs.append((key, size_of.get(other.id, 0)))
        node = node.children[step]
    if forced is not None:
        by_name = {a.name: a for a in fact.output}
        keys = [by_name[n] for n in forced if n in by_name]
        if len(keys) != 1:
            return keys, set()
        key = keys[0]
    else:
        # A join key is worth batching by when its table is not tiny beside the fact table: a key of a
        # table of 40 stores splits the rows into 40 clusters, too few (and skewed) for the intervals (75%
        # of 95% intervals covered the truth, against 93-96% batched by the sale's own id). Otherwise the
        # fact's first whole-number column, usually its own id (any split gives exact totals).
        big = [p for p in pairs if p[1] * KEY_TABLE_SHARE >= max(fact.size, 1)]
        whole = [a for a in fact.output if a.dtype in ("int", "bigint")]
        if big:
            key = max(big, key=lambda p: p[1])[0]
        elif whole:
            key = whole[0]
        else:
            return [], set()
    cls = {key.id}
    changed = True
    while changed:
        changed = False
        for a, b in equal:
            if (a in cls) != (b in cls):
                cls |= {a, b}
                changed = True
    return [key], cls


def _equalities(condition, outer: bool = False):
    """Equalities of two attributes among a condition's conjuncts; with ``outer``, those of an attribute and an
    outer reference (a correlated subquery's), as (inner attribute, outer attribute)."""
    if condition.kind == "And":
        for c in condition.children:
            yield from _equalities(c, outer)
        return
    if condition.kind != "EqualTo":
        return
    a, b = condition.children
    if not outer and a.kind == b.kind == "AttributeReference":
        yield a, b
    elif outer and {a.kind, b.kind} == {"AttributeReference", "OuterReference"}:
        inner, out = (a, b) if a.kind == "AttributeReference" else (b, a)
        yield inner, out
