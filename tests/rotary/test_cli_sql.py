"""``python -m spark_plugin.rotary sql``: a plain query over the user's Parquet runs to its exact answer; wrong
input is one line and exit status 2 (the criterion and --table before Spark starts, an unknown table after)."""

import subprocess
import sys

import pytest

from benchmarks.tpch.data import ensure_dataset


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "spark_plugin.rotary", *args], capture_output=True, text=True,
                          timeout=600)


def test_a_malformed_criterion_or_table_is_one_line_before_spark_starts(tmp_path):
    bad = _cli("sql", "select 1", "--until", "UNTIL ACC >= 2")
    assert bad.returncode == 2 and bad.stderr.startswith("error: --until") and bad.stderr.count("\n") == 1
    missing = _cli("sql", "select 1", "--table", f"t={tmp_path / 'nothing'}")
    assert missing.returncode == 2 and "does not exist" in missing.stderr and missing.stderr.count("\n") == 1


@pytest.mark.spark
def test_a_plain_query_runs_to_its_exact_answer_and_an_unknown_table_is_one_line(tmp_path):
    data = ensure_dataset(tmp_path / "tpch", 0.01, 1)
    run = _cli("sql", "select l_returnflag, sum(l_quantity) as q, max(l_tax) from lineitem group by l_returnflag",
               "--table", f"lineitem={data / 'lineitem'}", "--batches", "4", "--master", "local[2]")
    assert run.returncode == 0, run.stderr[-2000:]
    assert "batch 4/4 (100%)" in run.stdout and "exact" in run.stdout and "no interval" in run.stdout
    unknown = _cli("sql", "select count(*) from no_such_table", "--master", "local[2]")
    assert unknown.returncode == 2
    errors = [line for line in unknown.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "no_such_table" in errors[0] and "--table NAME=PATH" in errors[0]
    assert '"level": "ERROR"' not in unknown.stderr


@pytest.mark.spark
def test_prepare_writes_a_layout_that_sql_then_reads(tmp_path):
    data = ensure_dataset(tmp_path / "tpch", 0.01, 1)
    layouts = tmp_path / "layouts"
    prepared = _cli("prepare", str(data / "orders"), "--key", "o_orderkey", "--batches", "4",
                    "--layouts", str(layouts), "--master", "local[2]")
    assert prepared.returncode == 0, prepared.stderr[-2000:]
    assert "layout:" in prepared.stdout and list(layouts.rglob("_ROTARY_LAYOUT.json"))
    run = _cli("sql", "select o_orderstatus, count(*), sum(o_totalprice) from orders group by o_orderstatus",
               "--table", f"orders={data / 'orders'}", "--batches", "4", "--layouts", str(layouts),
               "--master", "local[2]")
    assert run.returncode == 0, run.stderr[-2000:]
    assert "batch 4/4 (100%)" in run.stdout and "not prepared" not in run.stdout
