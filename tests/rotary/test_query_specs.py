"""Progressive query specs and the arithmetic of their outputs (no Spark)."""

import math
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest

from spark_plugin import rotary
from spark_plugin.rotary.accuracy import Envelope, true_accuracy
from spark_plugin.rotary.engine import next_chunk
from spark_plugin.rotary.expressions import Expression
from spark_plugin.rotary.spec import QuerySpecError, parse


def test_every_required_tpch_query_ships_a_spec():
    assert len(rotary.available()) >= 18
    assert {1, 3, 5, 6, 10, 12, 13, 14, 15, 17, 19, 22} <= set(rotary.available())
    for q in rotary.available():
        spec = rotary.load(q)
        assert spec.aggregates and spec.sql.lstrip().lower().startswith("select")


def test_directives_continue_over_indented_comment_lines():
    spec = parse("-- A query.\n-- @keys: k\n-- @output: k, a,\n--          r = a / n\n"
                 "-- @order: r desc, k\n-- @limit: 3\nselect k, sum(x) as a, count(*) as n from t group by k")
    assert spec.keys == ("k",) and spec.columns == ["k", "a", "r"] and spec.aggregates == ["a", "r"]
    assert spec.order == (("r", True), ("k", False)) and spec.limit == 3 and not spec.exact_groups
    assert spec.description == "A query."
    assert spec.check_partials(["k", "a", "n"]) == ["a", "n"]


@pytest.mark.parametrize("text, message", [
    ("select 1", "needs an @output line"),
    ("-- @output: a\n-- @colour: red\nselect 1", r"unknown directive\(s\) \['colour'\]"),
    ("-- @output: a\n-- @order: b\nselect 1", "must be an output column"),
    ("-- @output: a\n-- @limit: ten\nselect 1", "@limit must be a whole number"),
    ("-- @output: a\n-- @groups: some\nselect 1", "@groups is 'scaled'"),
    ("-- @output: a\n-- @batch-by: nation\nselect 1", "@batch-by is one of orders, customer, supplier, part"),
    ("-- @keys: k\n-- @output: k, a\n-- @attributes: a\nselect 1", "@attributes and @attributes-from go together"),
    ("-- @output: a, b\n-- @attributes: b\n-- @attributes-from: select 1\nselect 1", "a query with @keys"),
    ("-- @output: a = __import__('os').getcwd()\nselect 1", "only column names, numbers"),
    ("-- @output: 2a = b\nselect 1", "must be `name` or `name = expression`"),
])
def test_malformed_specs_say_what_is_wrong(text, message):
    with pytest.raises(QuerySpecError, match=message):
        parse(text, name="bad")


def test_outputs_must_name_columns_the_sql_returns():
    spec = parse("-- @keys: k\n-- @output: k, r = a / m\nselect 1")
    with pytest.raises(QuerySpecError, match=r"output 'r' uses \['m'\]"):
        spec.check_partials(["k", "a"])
    with pytest.raises(QuerySpecError, match=r"@keys \['k'\] are not columns"):
        spec.check_partials(["a"])


def test_exact_evaluation_keeps_decimals_exact():
    e = Expression("100.00 * promo / total")
    assert e.names == ["promo", "total"]
    assert e.evaluate({"promo": Decimal("1.10"), "total": Decimal("3.30")}, exact=True) == Decimal("100.00") / 3
    assert e.evaluate({"promo": 1.1, "total": 3.3}) == pytest.approx(100 / 3)
    assert Expression("-a - (b - c)").evaluate({"a": 1, "b": 2, "c": 5}) == 2


SPEC = parse("-- @keys: k\n-- @output: k, s, r = s / n\nselect 1")


def _answer(rows):
    return pd.DataFrame(rows, columns=["k", "s", "r"])


@pytest.mark.parametrize("predicate", [
    "(t > c)", "((t >= c) and (u < 3))", "((t <= c) or (u is None))", "(not (t == u))", "((t / u) > 1.5)",
    "((-t + u * 2) != 4)", "(sqrt(u) < 2)", "((name == 'b') or (t > 2.5))", "(t is not None)"])
def test_a_predicate_over_whole_columns_equals_it_row_by_row(predicate):
    rng = np.random.default_rng(3)
    pools = {"t": [None, float("nan"), 0.0, 1.5, 2.5, 7.25, Decimal("2.5"), Decimal("3.10"), 4],
             "u": [None, 0, 1, 2, 3, Decimal("0.5"), 9.0], "name": [None, "a", "b"]}
    rows = [{k: pool[rng.integers(len(pool))] for k, pool in pools.items()} for _ in range(400)]
    expression = Expression(predicate)
    columns = {k: pd.Series([r[k] for r in rows], dtype=object) for k in pools}
    together = expression.test_all({**columns, "c": Decimal("2.5")}, len(rows))
    one_by_one = [expression.test({**r, "c": Decimal("2.5")}) is True for r in rows]
    assert together.tolist() == one_by_one and 0 < sum(one_by_one) < len(rows)


def test_true_accuracy_takes_the_ratio_either_way_and_zero_for_missing_groups():
    exact = _answer([("a", 100.0, 2.0), ("b", 50.0, -1.0)])
    assert true_accuracy(exact, exact, SPEC) == 1.0
    over = _answer([("a", 125.0, 2.0), ("b", 40.0, -1.0)])  # s: 0.8 and 0.8; r: 1 and 1
    assert true_accuracy(over, exact, SPEC) == pytest.approx(0.9)
    assert true_accuracy(_answer([("a", 100.0, 2.0)]), exact, SPEC) == pytest.approx(0.5)
    flipped = _answer([("a", 100.0, 2.0), ("b", 50.0, 1.0)])
    assert true_accuracy(flipped, exact, SPEC) == pytest.approx(0.75)
    assert true_accuracy(over, exact, SPEC, weights={"s": 3.0, "r": 1.0}) == pytest.approx((3 * 0.8 + 1) / 4)


def test_the_envelope_is_zero_until_its_window_fills_then_min_over_max():
    env = Envelope(SPEC, window=3)
    assert env.add(_answer([("a", 80.0, 1.0)])) == 0.0
    assert env.add(_answer([("a", 100.0, 1.0)])) == 0.0
    assert env.add(_answer([("a", 90.0, 1.0)])) == pytest.approx((0.8 + 1.0) / 2)
    assert env.add(_answer([("a", 95.0, 1.0)])) == pytest.approx((0.9 + 1.0) / 2)  # 80 left the window
    assert env.add(_answer([("a", 95.0, -1.0)])) == pytest.approx((90 / 95 + 0.0) / 2)  # sign change: 0
    with pytest.raises(ValueError, match=r"window must be a whole number in \[2, 1000\]"):
        Envelope(SPEC, window=1)


def test_a_group_new_to_the_window_scores_zero():
    env = Envelope(SPEC, window=2)
    env.add(_answer([("a", 10.0, 1.0)]))
    assert env.add(_answer([("a", 10.0, 1.0), ("b", 5.0, 1.0)])) == pytest.approx(0.5)


@pytest.mark.parametrize("batches", [2, 3, 7, 20, 64, 101])
@pytest.mark.parametrize("growth", [1.0, 1.5, 2.0, 4.0])
def test_chunks_cover_every_batch_once_and_grow_with_the_work_done(batches, growth):
    sizes, done = [], 0
    while done < batches:
        sizes.append(next_chunk(done, batches, growth))
        done += sizes[-1]
    assert done == batches and sizes[0] == 1 and all(s >= 1 for s in sizes)
    if growth == 1.0:
        assert sizes == [1] * batches
    else:
        assert len(sizes) <= 2 + math.ceil(math.log(batches) / math.log(growth))


def test_the_default_chunks_of_twenty_batches():
    sizes, done = [], 0
    while done < 20:
        sizes.append(next_chunk(done, 20, 4.0))
        done += sizes[-1]
    assert sizes == [1, 3, 16]  # the last chunk takes what another chunk would leave behind


def test_a_spec_names_its_batching_layout():
    assert parse("-- @output: n\nselect 1 as n").sampled_tables == ("lineitem", "orders")
    spec = parse("-- @output: n\n-- @batch-by: customer\nselect 1 as n")
    assert spec.layout == "customer" and spec.sampled_tables == ("customer", "orders")


def test_every_shipped_spec_groups_by_batch():
    assert all(rotary.load(q).by_batch for q in rotary.available())
    assert not parse("-- @output: n\nselect count(*) as n from lineitem").by_batch


def test_static_views_are_parsed():
    spec = parse("-- @output: n\n-- @static: big = select p_partkey from part\n--     where p_size > 10\n"
                 "-- @static: few = select 1 as one\nselect count(*) as n from lineitem, big where l_partkey = p_partkey")
    assert spec.statics == (("big", "select p_partkey from part where p_size > 10"), ("few", "select 1 as one"))
    with pytest.raises(QuerySpecError, match="must be `view_name = select"):
        parse("-- @output: n\n-- @static: select 1\nselect count(*) as n from lineitem")


def test_a_sum_over_no_value_is_null_until_a_batch_has_one_and_a_count_is_zero(tmp_path):
    from spark_plugin.rotary.totals import RunningTotals

    spec = parse("-- @output: revenue, n, per_row = revenue / n\nselect sum(x) as revenue, count(*) as n from t")
    totals = RunningTotals(spec.keys, ["revenue", "n"])
    empty = pd.DataFrame({"revenue": [None], "n": [0]})  # a batch where no row matched
    totals.add(empty)
    totals.add(empty)
    result, half = totals.estimate(spec, batches=4, confidence=0.95)
    assert result.iloc[0].tolist() == [None, 0, None] and math.isnan(half.at[0, "revenue"])
    totals.save(tmp_path / "t.parquet")
    reloaded = RunningTotals(spec.keys, ["revenue", "n"])
    reloaded.load(tmp_path / "t.parquet", batches_done=2)
    assert reloaded.estimate(spec, 4, 0.95)[0].iloc[0].tolist() == [None, 0, None]
    reloaded.add(pd.DataFrame({"revenue": [Decimal("6.00")], "n": [3]}))
    result, _ = reloaded.estimate(spec, batches=4, confidence=0.95)
    assert [float(v) for v in result.iloc[0]] == pytest.approx([8.0, 4.0, 2.0])  # scaled by 4/3 batches


def test_exact_groups_of_a_limited_answer_keep_only_the_top(tmp_path):
    from spark_plugin.rotary.totals import RunningTotals

    spec = parse("-- @keys: o\n-- @output: o, v\n-- @order: v desc, o\n-- @limit: 2\n-- @groups: exact\n"
                 "select o, sum(x) as v from t group by o")
    pruned, whole = RunningTotals(["o"], ["v"]), RunningTotals(["o"], ["v"])
    batches = [pd.DataFrame({"o": [1, 2, 3], "v": [Decimal(5), Decimal(9), Decimal(1)]}),
               pd.DataFrame({"o": [4, 5], "v": [Decimal(7), Decimal(9)]}),
               pd.DataFrame({"o": [6], "v": [Decimal(2)]})]
    for batch in batches:
        pruned.add(batch)
        pruned.keep_top(spec)
        whole.add(batch)
        pd.testing.assert_frame_equal(pruned.estimate(spec, 3, 0.95)[0], whole.estimate(spec, 3, 0.95)[0])
        assert pruned.groups <= 2
    assert pruned.estimate(spec, 3, 0.95)[0]["o"].tolist() == [2, 5]


def test_exact_groups_are_computed_once_and_again_when_a_batch_changes_one():
    """Each snapshot computes only the groups new since the last (their rows are final); the answer equals
    the one computed over every group at once, also when a batch (against the spec) changes a known group."""
    import dataclasses

    from spark_plugin.rotary.expressions import Expression
    from spark_plugin.rotary.totals import RunningTotals

    spec = dataclasses.replace(parse("-- @keys: o\n-- @output: o, v, n, per = v / n\n-- @order: per desc, o\n"
                                     "-- @groups: exact\nselect o, sum(x) as v, count(*) as n from t group by o"),
                               having=Expression("((v > 4) and (n < 3))"))
    rng = np.random.default_rng(5)
    batches = [pd.DataFrame({"o": range(start, start + 300), "v": [Decimal(int(c)) / 4 for c in rng.integers(0, 40, 300)],
                             "n": rng.integers(1, 5, 300)}) for start in range(0, 1200, 300)]
    first = batches[0]
    left_out = int(first.o[(first.v <= 4) & (first.n < 3)].iloc[0])  # passes HAVING once the batch below adds 80
    batches.insert(2, pd.DataFrame({"o": [left_out, 1000], "v": [Decimal(80), Decimal(1)], "n": [0, 1]}))
    incremental = RunningTotals(["o"], ["v", "n"])
    for b, batch in enumerate(batches):
        incremental.add(batch)
        at_once = RunningTotals(["o"], ["v", "n"])
        for earlier in batches[:b + 1]:
            at_once.add(earlier)
        for got, want in zip(incremental.estimate(spec, 5, 0.95), at_once.estimate(spec, 5, 0.95)):
            pd.testing.assert_frame_equal(got, want)
    result = incremental.estimate(spec, 5, 0.95)[0]
    assert left_out in result["o"].tolist() and 0 < len(result) < 1200 and (result["n"] < 3).all()


def test_exact_groups_computed_in_two_snapshots_still_checkpoint_and_resume_every_group(tmp_path):
    """The second snapshot computes only the new groups: their index must not stand for every group's (an
    arbiter pausing such a job after two snapshots failed to write its checkpoint)."""
    from spark_plugin.rotary.totals import RunningTotals

    spec = parse("-- @keys: o\n-- @output: o, v\n-- @order: o\n-- @groups: exact\nselect o, sum(x) as v from t group by o")
    totals = RunningTotals(["o"], ["v"])
    for batch in (pd.DataFrame({"o": [1, 2], "v": [Decimal(5), Decimal(9)]}),
                  pd.DataFrame({"o": [3], "v": [Decimal(7)]})):
        totals.add(batch)
        totals.estimate(spec, 2, 0.95)
    assert totals.exact.index.tolist() == [1, 2, 3]
    totals.save(tmp_path / "totals.parquet")
    resumed = RunningTotals(["o"], ["v"])
    resumed.load(tmp_path / "totals.parquet", batches_done=2)
    pd.testing.assert_frame_equal(resumed.estimate(spec, 2, 0.95)[0], totals.estimate(spec, 2, 0.95)[0])
    assert resumed.estimate(spec, 2, 0.95)[0]["v"].tolist() == [Decimal(5), Decimal(9), Decimal(7)]


def test_a_null_numeric_key_is_one_group_across_batches_and_a_checkpoint(tmp_path):
    """pandas reads a NULL of a numeric key as NaN, which equals no other NaN: every batch's NULL rows must
    still fold into one group, also after a save and load."""
    from spark_plugin.rotary.totals import RunningTotals

    spec = parse("-- @keys: o\n-- @output: o, v\nselect o, sum(x) as v from t group by o")
    totals = RunningTotals(["o"], ["v"])
    for _ in range(2):
        totals.add(pd.DataFrame({"o": [1.0, np.nan], "v": [Decimal(1), Decimal(2)]}))
    assert totals.groups == 2
    totals.save(tmp_path / "totals.parquet")
    resumed = RunningTotals(["o"], ["v"])
    resumed.load(tmp_path / "totals.parquet", batches_done=2)
    resumed.add(pd.DataFrame({"o": [np.nan], "v": [Decimal(2)]}))
    assert resumed.groups == 2
    answer = resumed.estimate(spec, 3, 0.95)[0]
    assert answer["v"][answer["o"].isna()].tolist() == [Decimal(6)]


@pytest.mark.parametrize("order", ["v desc, o", "v, o desc", "per desc, o", "per, o"])
def test_a_limited_answer_over_many_groups_is_the_head_of_the_whole_ordering(order):
    from spark_plugin.rotary.totals import RunningTotals

    head = "-- @keys: o\n-- @output: o, v, n, per = v / n\n-- @order: " + order
    sql = "\nselect o, sum(x) as v, count(*) as n from t group by o"
    limited, whole = parse(head + "\n-- @limit: 7" + sql), parse(head + sql)
    totals = RunningTotals(["o"], ["v", "n"])
    rng = np.random.default_rng(3)
    for _ in range(4):  # groups repeat across batches; values tie often (few distinct cents)
        groups = rng.choice(3000, size=2000, replace=False)
        cents = rng.integers(0, 40, size=groups.size)
        batch = pd.DataFrame({"o": groups, "v": [Decimal(int(c)) / 100 for c in cents],
                              "n": rng.integers(1, 4, groups.size)})
        batch.loc[batch.index[:5], "v"] = None  # NULL sums rank as SQL's do, wherever they fall
        totals.add(batch)
        got, got_half = totals.estimate(limited, 20, 0.95)
        want, want_half = totals.estimate(whole, 20, 0.95)
        pd.testing.assert_frame_equal(got, want.head(7))
        pd.testing.assert_frame_equal(got_half, want_half.head(7))


@pytest.mark.parametrize("options, message", [(dict(confidence=1.5), "confidence"), (dict(growth=0.5), "growth")])
def test_a_bad_confidence_or_growth_is_refused_before_anything_is_read_or_written(tmp_path, options, message):
    """No session is given (None): a check that came after the batched copy or the plan would fail otherwise."""
    from spark_plugin import rotary

    with pytest.raises(ValueError, match=message):
        rotary.ProgressiveQuery(None, 6, tmp_path / "no-data", **options)
    with pytest.raises(ValueError, match=message):
        rotary.progressive_query(None, "select 1", **options)
    assert list(tmp_path.iterdir()) == []
