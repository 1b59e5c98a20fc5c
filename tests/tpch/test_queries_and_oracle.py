"""Query selection, SQL loading and the DuckDB comparison rules (no Spark)."""

import datetime
from decimal import Decimal

import pytest

from benchmarks.tpch.modes import ModeError, parse_modes
from benchmarks.tpch.oracle import ResultMismatch, compare, values_equal
from benchmarks.tpch.queries import ALL_QUERIES, QuerySelectionError, order_columns, parse_selection, query_text


@pytest.mark.parametrize("text,expected", [
    ("1-22", list(range(1, 23))), ("6", [6]), ("1,3,5-7", [1, 3, 5, 6, 7]), ("q3, Q5", [3, 5]),
    ("7-7,7", [7]),
])
def test_selection_is_parsed(text, expected):
    assert parse_selection(text) == expected


@pytest.mark.parametrize("text", ["0", "23", "1-23", "30-5", "a", "1;2", ""])
def test_bad_selection_names_the_valid_range(text):
    with pytest.raises(QuerySelectionError, match=r"queries 1 to 22|Cannot read query selection"):
        parse_selection(text)


@pytest.mark.parametrize("text, message", [
    ("5-3", "--queries 5-3 is reversed: write 3-5."),
    ("1,q9-q7,12", "--queries 1,q9-q7,12 is reversed: write 1,7-9,12."),
])
def test_a_reversed_range_is_named_with_its_fix(text, message):
    with pytest.raises(QuerySelectionError) as refused:
        parse_selection(text)
    assert str(refused.value) == message


def test_modes_are_parsed_and_unknown_ones_listed():
    assert parse_modes("vanilla, bare,vanilla") == ["vanilla", "bare"]
    with pytest.raises(ModeError, match=r"Unknown mode 'turbo'\. Known modes: bare, vanilla"):
        parse_modes("vanilla,turbo")
    with pytest.raises(ModeError, match="No mode given"):
        parse_modes(" , ")


@pytest.mark.parametrize("q", ALL_QUERIES)
def test_every_query_loads_without_comments_or_placeholders(q):
    sql = query_text(q, 1.0)
    assert sql.lower().startswith(("select", "with")) and "--" not in sql and "${" not in sql


def test_q11_fraction_scales_with_the_data():
    assert "(0.0001 / 0.01)" in query_text(11, 0.01)
    assert "(0.0001 / 10.0)" in query_text(11, 10)


@pytest.mark.parametrize("q,expected", [
    (1, ["l_returnflag", "l_linestatus"]), (3, ["revenue", "o_orderdate"]), (6, []),
    (9, ["nation", "o_year"]), (16, ["supplier_cnt", "p_brand", "p_type", "p_size"]),
    (18, ["o_totalprice", "o_orderdate"]), (21, ["numwait", "s_name"]),
])
def test_order_columns_come_from_the_outer_order_by(q, expected):
    assert order_columns(query_text(q, 1)) == expected


@pytest.mark.parametrize("a,b,equal", [
    (Decimal("10.25"), Decimal("10.25"), True),
    (Decimal("10.25"), Decimal("10.26"), False),            # money: exact to the cent
    (Decimal("0.050081"), 0.05008133906964238, True),       # Spark's 6-digit avg vs DuckDB's double
    (Decimal("0.050081"), 0.0500816, False),
    (Decimal("25.575155"), Decimal("25.5751546114"), True),  # rounding to the coarser scale
    (Decimal("25.575155"), Decimal("25.5751556"), False),
    (1.0, 1.0000001, True), (1.0, 1.00001, False), (3, 3, True), (3, 4, False),
    (datetime.date(1995, 1, 1), datetime.date(1995, 1, 1), True), ("A", "A", True), ("A", "B", False),
    (None, None, True), (None, 0, False),
])
def test_value_equality_rules(a, b, equal):
    assert values_equal(a, b) is equal


def test_rows_tied_on_the_order_columns_may_come_in_any_order():
    expected = [(1, "b"), (1, "a"), (2, "c")]
    compare(["k", "v"], [(1, "a"), (1, "b"), (2, "c")], expected, ["k"])
    with pytest.raises(ResultMismatch):
        compare(["k", "v"], [(2, "c"), (1, "a"), (1, "b")], expected, ["k"])


def test_unordered_results_compare_as_multisets():
    compare(["x"], [(2,), (1,)], [(1,), (2,)], [])


def test_mismatch_shows_the_first_differing_rows():
    with pytest.raises(ResultMismatch) as info:
        compare(["k", "total"], [(1, Decimal("5.00")), (2, Decimal("7.00"))],
                [(1, Decimal("5.00")), (2, Decimal("7.01"))], ["k"])
    text = str(info.value)
    assert "1 of 2 rows differ; first at row 1" in text
    assert "spark  (2, Decimal('7.00'))" in text and "duckdb (2, Decimal('7.01'))" in text


def test_row_count_mismatch_is_reported():
    with pytest.raises(ResultMismatch, match="Spark returned 1 rows, DuckDB 2"):
        compare(["x"], [(1,)], [(1,), (2,)], [])
