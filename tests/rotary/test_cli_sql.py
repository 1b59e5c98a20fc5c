"""``python -m spark_plugin.rotary sql``: a plain query over the user's Parquet runs to its exact answer; wrong
input is one line and exit status 2 (the criterion and --table before Spark starts, an unknown table after)."""

import subprocess
import sys

import pytest

from benchmarks.tpch.data import ensure_dataset
from tests.rotary.cli_runner import run_cli, run_cli_process


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "spark_plugin.rotary", *args], capture_output=True, text=True,
                          timeout=600)


def test_a_malformed_criterion_or_table_is_one_line_before_spark_starts(tmp_path):
    bad, started = run_cli_process(tmp_path, "sql", "select 1", "--until", "UNTIL ACC >= 2")  # the process itself
    assert bad.returncode == 2 and bad.stderr.startswith("error: --until") and bad.stderr.count("\n") == 1
    assert not started
    missing, started = run_cli(tmp_path, "sql", "select 1", "--table", f"t={tmp_path / 'nothing'}")
    assert missing.returncode == 2 and "does not exist" in missing.stderr and missing.stderr.count("\n") == 1
    assert not started


def test_prepare_and_plot_arguments_are_checked_before_spark_starts(tmp_path):
    """Each command's ``main`` in this process (:func:`.cli_runner.run_cli`): no interpreter per check."""
    neither, started = run_cli(tmp_path, "prepare")
    assert neither.returncode == 2 and "needs a TABLE and its --key" in neither.stderr
    both, started = run_cli(tmp_path, "prepare", str(tmp_path), "--key", "k", "--query", "select 1")
    assert both.returncode == 2 and "not both" in both.stderr and both.stderr.count("\n") == 1
    plot, started = run_cli(tmp_path, "sql", "select 1", "--plot", str(tmp_path / "converge.txt"))
    assert plot.returncode == 2 and "ending in .png" in plot.stderr
    (tmp_path / "dir.png").mkdir()
    folder, started = run_cli(tmp_path, "sql", "select 1", "--plot", str(tmp_path / "dir.png"))
    assert folder.returncode == 2 and "is a folder" in folder.stderr and folder.stderr.count("\n") == 1
    no_checkpoint, started = run_cli(tmp_path, "sql", "--resume", str(tmp_path))
    assert no_checkpoint.returncode == 2 and "is not a progressive query checkpoint" in no_checkpoint.stderr
    assert no_checkpoint.stderr.count("\n") == 1
    assert not started  # by any of them


@pytest.mark.spark
def test_sql_over_prepared_layouts_stops_checkpoints_and_resumes_to_its_exact_answer_and_plots(tmp_path):
    """One pass through the three commands a user chains (each a Spark application of its own, so they share
    this test): prepare for a join, sql over the layouts until its criterion with a checkpoint, sql --resume
    to the exact answer with a plot. MAX has no interval, so the exact answer's table says so."""
    data = ensure_dataset(tmp_path / "tpch", 0.01, 1)
    layouts, checkpoint = tmp_path / "layouts", tmp_path / "checkpoint"
    sql = ("select o_orderstatus, count(*), sum(l_quantity) as q, max(l_tax) from orders join lineitem on "
           "o_orderkey = l_orderkey group by o_orderstatus")
    tables = ["--table", f"orders={data / 'orders'}", "--table", f"lineitem={data / 'lineitem'}"]
    prepared = _cli("prepare", "--query", sql, *tables, "--batches", "4", "--layouts", str(layouts),
                    "--master", "local[2]")
    assert prepared.returncode == 0, prepared.stderr[-2000:]
    lines = [line for line in prepared.stdout.splitlines() if line.startswith("layout:")]
    assert len(lines) == 2  # lineitem, and orders read by the same batches (joined on the key)
    assert "lineitem" in lines[0] and "l_orderkey-b4-s0" in lines[0] and "o_orderkey-b4-s0" in lines[1]
    run = _cli("sql", sql, *tables, "--batches", "4", "--layouts", str(layouts), "--master", "local[2]",
               "--until", "RUN FOR 2 EPOCHS", "--checkpoint", str(checkpoint))
    assert run.returncode == 0, run.stderr[-2000:]
    assert "batch 2/4 (50%)" in run.stdout and "checkpoint:" in run.stdout and "not prepared" not in run.stdout
    resumed = _cli("sql", "--resume", str(checkpoint), "--master", "local[2]",  # query and --table: its own
                   "--plot", str(tmp_path / "converge.png"))
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "batch 4/4 (100%)" in resumed.stdout and "exact" in resumed.stdout
    assert "no interval" in resumed.stdout
    shown = " ".join(resumed.stdout.split())
    assert "accuracy 1.000 - exact" in shown  # the exact answer, though the resumed run saw two snapshots
    assert (tmp_path / "converge.png").stat().st_size > 10_000 and "plot:" in resumed.stdout


@pytest.mark.spark
def test_a_query_spark_cannot_analyze_is_one_line_in_sql_and_prepare(tmp_path):
    """Spark's own reason, one ``error:`` line, not pyspark's log of the Java stack. A syntax error takes the
    same path as the unknown table here (``QueryError``); its exact line is tested without a subprocess
    (tests/rotary/test_rewrite.py, ``test_a_query_spark_cannot_analyze_is_one_line``)."""
    unknown = _cli("sql", "select count(*) from no_such_table", "--master", "local[1]")
    assert unknown.returncode == 2
    errors = [line for line in unknown.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "no_such_table" in errors[0] and "--table NAME=PATH" in errors[0]
    assert '"level": "ERROR"' not in unknown.stderr
    unprepared = _cli("prepare", "--query", "select x, count(*) from no_such_table group by x", "--master", "local[1]",
                      "--layouts", str(tmp_path / "layouts"))
    assert unprepared.returncode == 2  # one line, as sql says it: not pyspark's log of the Java stack (11 KB)
    errors = [line for line in unprepared.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "no_such_table" in errors[0] and '"level": "ERROR"' not in unprepared.stderr
    assert len(unprepared.stderr) < 3000, unprepared.stderr[-3000:]
