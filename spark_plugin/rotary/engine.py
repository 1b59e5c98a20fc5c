"""Online aggregation on Spark: a query run batch by batch, with an estimate after each batch.

>>> for snap in progressive(spark, 5, data="~/.cache/sparkrm/tpch/sf1-parts4", batches=20):
...     print(snap.fraction, snap.result)

Each step folds the next batch's per-group partials into :class:`RunningTotals`. The partials come
from the spec's SQL over the fact tables restricted to a *chunk* of batches, grouped by batch: one
Spark query answers several batches, whose estimates are then delivered one by one. Most of a small
query's cost is fixed (planning, broadcasts of dimension tables, job scheduling), so one query per
batch made the answers slower than the exact query; chunks grow with the work done (``growth``: each
query processes ``growth - 1`` times the batches done so far, so 1, 3, then the rest of 20 at the
default 4), which keeps the first estimate one batch away and the number of queries logarithmic. At
SF 1, growth 4 gave the exact final answer sooner than 2 on every query tried, with first estimates
as early.
What a batch holds comes from the query's *source*, held by composition: a hand-written TPC-H spec over
batched data (:class:`.spec_source.SpecSource`, this module's constructor) or a plain query's plan with the
fact table substituted (:class:`.sqlquery.PlanSource`, :func:`.sqlquery.query`). The engine keeps every
piece of a run's state (batch order, running totals, chunks computed ahead, attributes looked up), so a
change to it is made here once, for every front end.
A job can stop at any step boundary, :meth:`ProgressiveQuery.checkpoint` to disk and later
:meth:`resume` exactly where it was: same batch order, same totals, same trajectory.
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..errors import NotOursError
from ..ownership import FolderKind
from .batches import BATCH_COLUMN
from .spec import CONFIDENCE, QuerySpec, QuerySpecError
from .spec_source import SpecSource
from .totals import RunningTotals

STATE_FILE = "state.json"
#: A limited answer's attributes are looked up ahead for this many times its rows (slack for float ranking).
ATTRIBUTE_PREFETCH = 2
TOTALS_FILE = "totals.parquet"
#: A checkpoint folder: its state and running totals, nothing else (anything else there is the user's).
CHECKPOINT = FolderKind("Rotary checkpoint", (STATE_FILE, TOTALS_FILE))


@dataclass(frozen=True)
class Snapshot:
    """The answer after ``batch`` of ``batches`` batches."""

    batch: int
    batches: int
    elapsed_s: float
    result: pd.DataFrame  # the query's columns: keys exact, aggregates estimated
    ci: pd.DataFrame  # keys plus the half-width of each aggregate's confidence interval
    confidence: float
    exact_reason: str | None = None  # why a plain query ran exactly in one step (None: it ran progressively)
    notes: tuple[str, ...] = ()  # what else the answer's reader should know (running values, HAVING, ...)

    @property
    def fraction(self) -> float:
        return self.batch / self.batches

    @property
    def final(self) -> bool:
        """Whether every batch is in: the result is then the exact answer."""
        return self.batch == self.batches


class ProgressiveQuery:
    """One progressive query; :meth:`step` processes one batch. ``ProgressiveQuery(spark, query, data, ...)``
    runs TPC-H spec ``query`` over folder ``data``; :meth:`over` runs any other source."""

    def __init__(self, spark, query, data, batches: int = 20, seed: int = 0, order_seed: int | None = None,
                 confidence: float = 0.95, growth: float = 4.0):
        check_options(confidence, growth)  # before the batched copy is made: a refusal costs nothing
        self._begin(SpecSource(spark, query, data, batches, seed), seed if order_seed is None else order_seed,
                    confidence, growth)

    @classmethod
    def over(cls, source, order_seed: int, confidence: float = 0.95, growth: float = 4.0) -> "ProgressiveQuery":
        """A progressive query reading its batches from ``source`` (a :class:`.spec_source.SpecSource`, a
        :class:`.sqlquery.PlanSource`: ``spark``, ``name``, ``spec``, ``batches``, ``rows(batch_ids)``,
        ``read_attributes(wanted)``, ``snapshot_notes(totals)``, ``state()``, ``holding`` and ``close()``)."""
        job = cls.__new__(cls)
        job._begin(source, order_seed, confidence, growth)
        return job

    def _begin(self, source, order_seed: int, confidence: float, growth: float) -> None:
        """The run's whole state, for every source (the one place it is set up)."""
        check_options(confidence, growth)
        self.source = source
        self.spark = source.spark
        self.query = source.name
        self.spec: QuerySpec = source.spec
        self.confidence = confidence
        self.order_seed = order_seed
        self.order = random.Random(order_seed).sample(range(source.batches), source.batches)
        self.growth = growth if self.spec.by_batch else 1.0
        self.elapsed_s = 0.0
        self._totals: RunningTotals | None = None
        self._ready: list[pd.DataFrame] = []  # partials of the next batches, computed by the last chunk
        self._attributes: pd.DataFrame | None = None  # the spec's @attributes of the keys looked up so far

    @property
    def batches(self) -> int:
        return self.source.batches

    @property
    def batches_done(self) -> int:
        return self._totals.batches_done if self._totals else 0

    @property
    def done(self) -> bool:
        return self.batches_done == self.batches

    @property
    def batches_ready(self) -> int:
        """Batches already computed by the last Spark query and not yet delivered: steps that cost no Spark work."""
        return len(self._ready)

    @property
    def next_query_batches(self) -> int:
        """Batches the next Spark query will process (0 while computed batches wait to be delivered)."""
        if self._ready or self.done:
            return 0
        return next_chunk(self.batches_done, self.batches, self.growth)

    @property
    def groups(self) -> int:
        """Groups seen so far: the state's rows."""
        return self._totals.groups if self._totals else 0

    @property
    def state_bytes(self) -> int:
        """About how many bytes :meth:`checkpoint` writes (O(groups))."""
        return self._totals.state_bytes if self._totals else 0

    def step(self) -> Snapshot:
        """Process the next batch and return the new estimate."""
        if self.done:
            raise StopIteration(f"{self.spec.name}: all {self.batches} batches are processed")
        start = time.perf_counter()
        if not self._ready:
            done = self.batches_done
            self._ready = self.partials(self.order[done:done + self.next_query_batches])
            self._prefetch_attributes(self._ready)
        partials = self._ready.pop(0)
        if self._totals is None:
            self._totals = self._new_totals(partials)
        self._totals.add(partials)
        self._totals.keep_top(self.spec)
        if self.done:
            self.close()
        self.elapsed_s += time.perf_counter() - start
        return self.snapshot()

    def close(self) -> None:
        """Let go of what the source holds between steps (a TPC-H spec's cached static views; done by itself
        after the last batch; a query abandoned earlier should close, or be used as a context manager). It
        can still step: the views are cached again."""
        self.source.close()

    def __enter__(self) -> "ProgressiveQuery":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def snapshot(self) -> Snapshot:
        """The current estimate, without processing anything."""
        if not self._totals or self.batches_done == 0:
            raise RuntimeError(f"{self.spec.name}: no batch processed yet")
        result, ci = self._totals.estimate(self.spec, self.batches, self.confidence)
        return Snapshot(self.batches_done, self.batches, self.elapsed_s, self._with_attributes(result), ci,
                        self.confidence, notes=self.source.snapshot_notes(self._totals))

    def __iter__(self):
        while not self.done:
            yield self.step()

    def partials(self, batch_ids) -> list[pd.DataFrame]:
        """The spec's per-group partial totals of each of batches ``batch_ids``, in that order, from one
        Spark query (several batches only for a spec that groups by ``rotary_batch``)."""
        batch_ids = [int(b) for b in batch_ids]
        if len(batch_ids) > 1 and not self.spec.by_batch:
            raise QuerySpecError(f"{self.spec.name}: its SQL does not group by {BATCH_COLUMN}, so one query "
                                 "answers one batch")
        return self._split(self.source.rows(batch_ids), batch_ids)

    def exact(self) -> pd.DataFrame:
        """The exact answer, by the same source over the whole data in one Spark query (for accuracy)."""
        everything = range(self.batches)
        holding = self.source.holding
        rows = self.source.rows(everything)
        if not holding:
            self.close()
        batches = self._split(rows, everything) if self.spec.by_batch else [rows]
        totals = self._new_totals(batches[0])
        for batch in batches:
            totals.add(batch)
        return self._with_attributes(totals.estimate(self.spec, len(batches), self.confidence)[0])  # scale 1

    def _with_attributes(self, result: pd.DataFrame) -> pd.DataFrame:
        """``result`` with the spec's ``@attributes`` looked up by key, in the spec's column order."""
        if not self.spec.attributes:
            return result
        index = _key_index(result, self.spec.keys)
        self._look_up_attributes(index)
        if self._attributes is None:  # nothing looked up yet: the answer has no rows
            return result.assign(**{c: [] for c in self.spec.attributes})[self.spec.columns]
        found = self._attributes.reindex(index)
        return result.assign(**{c: found[c].to_numpy() for c in self.spec.attributes})[self.spec.columns]

    def _prefetch_attributes(self, partials: list[pd.DataFrame]) -> None:
        """Look up, in one query, the attributes of the groups the answers after each of a chunk's batches
        will show: a limited answer ordered by a total ranks its groups by their running sums, which the
        chunk's partials give before the batches are folded in one by one. Snapshots then need no lookup of
        their own (a top-20 of 10^5 customers changes with nearly every batch: one lookup per snapshot cost
        8 s at SF 10). Ties and orders by a key are left to the lookup of each snapshot."""
        limit, order, keys = self.spec.limit, self.spec.order, list(self.spec.keys)
        if not (self.spec.attributes and limit and order):
            return
        column, descending = order[0]
        output = next((o for o in self.spec.outputs if o.name == column), None)
        derived = output is not None and output.derived
        names = list(output.expression.names) if derived else [column]
        if column in keys or not set(names) <= set(partials[0].columns):  # ranked by a key or an attribute
            return
        running = {n: self._totals.sums[n] for n in names} if self._totals is not None else None
        shown = []
        for i, batch in enumerate(partials, start=self.batches_done + 1):
            by_key = batch.set_index(keys)
            running = {n: by_key[n].astype(float) if running is None else
                       running[n].add(by_key[n].astype(float), fill_value=0) for n in names}
            scaled = {n: v * (self.batches / i) for n, v in running.items()}
            value = output.expression.evaluate(scaled) if derived else scaled[column]
            value = pd.Series(value, index=running[names[0]].index).astype(float)
            shown.append((value.nlargest if descending else value.nsmallest)(limit * ATTRIBUTE_PREFETCH).index)
        self._look_up_attributes(shown[0].append(shown[1:]).unique())

    def _look_up_attributes(self, index: pd.Index) -> None:
        """Read the attributes of the keys in ``index`` not looked up yet (reading every customer's name and
        address into the driver once cost 3 s and 260 MB at SF 10, for the 20 rows of Q10's answer)."""
        known = self._attributes.index if self._attributes is not None else index[:0]
        new = index.difference(known)
        if not new.empty:
            self._attributes = pd.concat([self._attributes, self.source.read_attributes(new)])

    def _split(self, rows: pd.DataFrame, batch_ids) -> list[pd.DataFrame]:
        """Each batch's rows of a result grouped by batch, without the batch column. A batch with no row
        for a query without groups adds what its aggregates give over no rows: 0 for integer columns
        (COUNT), NULL for the others (SUM); a total NULL in every batch so far is NULL in the answer."""
        if not self.spec.by_batch:
            return [rows]
        if BATCH_COLUMN not in rows:
            raise QuerySpecError(f"{self.spec.name}: its SQL names {BATCH_COLUMN} but does not return it; "
                                 "select and group by it, as the shipped specs do")
        by_batch = {b: group for b, group in rows.groupby(BATCH_COLUMN)}
        out = []
        for b in batch_ids:
            batch = by_batch.get(b, rows.iloc[0:0]).drop(columns=BATCH_COLUMN)
            if batch.empty and not self.spec.keys:
                batch = pd.DataFrame([{c: 0 if pd.api.types.is_integer_dtype(t) else None
                                       for c, t in batch.dtypes.items()}], columns=batch.columns)
            out.append(batch.reset_index(drop=True))
        return out

    def _new_totals(self, partials: pd.DataFrame) -> RunningTotals:
        return RunningTotals(self.spec.keys, self.spec.check_partials(list(partials.columns)), dict(self.spec.kinds))

    # -- checkpoint and resume ---------------------------------------------------------------
    def checkpoint(self, path, context: dict | None = None) -> Path:
        """Write the running state and batch cursor to folder ``path`` (replaced atomically).

        ``path`` must be missing, empty or a checkpoint written here before (:func:`check_checkpoint`):
        a folder holding anything else is refused, untouched. Batches computed but not yet delivered
        (:attr:`batches_ready`) are not written: a resumed query computes them again.
        :class:`.suspension.SuspendableQuery` delivers them first. ``context``, any JSON-able dict, is kept
        with the state for the caller (:func:`read_state` returns it)."""
        source = self.source.state()  # first: a source that cannot be rebuilt from a file refuses here
        path, tmp = check_checkpoint(path), _staging(Path(path).expanduser())
        CHECKPOINT.remove(tmp)  # an earlier, interrupted checkpoint's
        CHECKPOINT.claim(tmp)
        state = {**source, "batches": self.batches, "order_seed": self.order_seed, "order": self.order,
                 "confidence": self.confidence, "growth": self.growth,
                 "batches_done": self.batches_done, "elapsed_s": self.elapsed_s,
                 "totals": self._totals.totals if self._totals else None, "context": context or {}}
        if self._totals:
            self._totals.save(tmp / TOTALS_FILE)
        (tmp / STATE_FILE).write_text(json.dumps(state, indent=1))
        return CHECKPOINT.replace(path, tmp)

    @classmethod
    def resume(cls, spark, path) -> "ProgressiveQuery":
        """A query continued from checkpoint folder ``path``."""
        path = Path(path)
        state = read_state(path)
        if "query" not in state:
            raise ValueError(f"{path} holds a plain query's run: resume it with rotary.sqlquery.resume")
        job = cls(spark, state["query"], state["data"], state["batches"], state["seed"], state["order_seed"],
                  state["confidence"], state.get("growth", 4.0))
        job._restore(state, path)
        return job

    def _restore(self, state: dict, path: Path) -> None:
        """Continue from a checkpoint's ``state`` (read from folder ``path``) on this freshly built query."""
        if self.order != state["order"]:
            raise ValueError(f"{path}: the checkpoint's batch order does not match its seed")
        self.elapsed_s = state["elapsed_s"]
        if state["totals"] is not None:
            self._totals = RunningTotals(self.spec.keys, state["totals"], dict(self.spec.kinds))
            self._totals.load(path / TOTALS_FILE, state["batches_done"])


def check_options(confidence: float, growth: float) -> None:
    """Refuse a confidence outside (0, 1) or a growth below 1, in one line."""
    CONFIDENCE.check(confidence, what="confidence")
    if not growth >= 1:
        raise ValueError(f"growth must be >= 1 (1: one Spark query per batch), not {growth!r}")


def check_checkpoint(path, what: str | None = None) -> Path:
    """``path`` as a folder a checkpoint may be written to: missing, empty or a checkpoint (and so its staging
    folder beside it), in a folder that can be written. Call it before the run whose state goes there.

    Raises
    ------
    NotOursError
        One line naming ``path`` (as argument ``what``) and what is in the way: the user's files, a file, or
        a folder that cannot be written.
    """
    path = CHECKPOINT.check_writable(path, what=what)
    CHECKPOINT.check_writable(_staging(path), what=f"{what or 'the checkpoint'}'s staging folder")
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir() or not os.access(ancestor, os.W_OK | os.X_OK):
        raise NotOursError(f"{what + ' ' if what else ''}{path} cannot be written ({ancestor} is not a writable "
                           "folder); choose another folder")
    return path


def _staging(path: Path) -> Path:
    """Where a checkpoint of ``path`` is written before it replaces ``path``."""
    return path.with_name(path.name + ".tmp")


#: What a checkpoint's state holds, by what it resumes: a TPC-H spec over data, or a plain query's SQL.
_STATE_KEYS = ("batches", "seed", "order_seed", "confidence", "order", "elapsed_s", "totals", "batches_done")
_SOURCE_KEYS = {"query": ("query", "data"), "sql": ("sql", "batch_key", "layouts", "tables", "growth")}


def read_state(path) -> dict:
    """The state a checkpoint folder ``path`` holds (no Spark needed); ValueError naming it when unreadable,
    when its state lacks a field its run resumes from, or when it lacks the running totals the state names."""
    path = Path(path)
    try:
        state = json.loads((path / STATE_FILE).read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"{path} is not a progressive query checkpoint: {e}") from None
    if not isinstance(state, dict):
        raise ValueError(f"{path} is not a progressive query checkpoint: {STATE_FILE} holds no JSON object")
    missing = [k for k in (*_SOURCE_KEYS["sql" if "sql" in state else "query"], *_STATE_KEYS) if k not in state]
    if missing:
        raise ValueError(f"{path} is not a whole progressive query checkpoint: {STATE_FILE} lacks {missing} "
                         "(written by another version, or edited)")
    if state["totals"] is not None and not (path / TOTALS_FILE).is_file():
        raise ValueError(f"{path} is not a whole progressive query checkpoint: {TOTALS_FILE} is missing")
    return state


def _key_index(rows: pd.DataFrame, keys) -> pd.Index:
    keys = list(keys)
    return pd.MultiIndex.from_frame(rows[keys]) if len(keys) > 1 else pd.Index(rows[keys[0]], name=keys[0])


def next_chunk(done: int, batches: int, growth: float) -> int:
    """How many batches the next Spark query processes after ``done`` of ``batches``: ``growth - 1``
    times ``done`` (at least one), or all that are left when fewer than another such chunk would remain."""
    size = max(1, round((growth - 1) * done))
    left = batches - done
    return left if left - size < size else size
