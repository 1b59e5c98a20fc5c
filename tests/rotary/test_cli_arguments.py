"""``python -m spark_plugin.rotary run``: bad arguments are refused in one line before any JVM starts (no Spark)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spark_plugin.errors import SparkrmError
from spark_plugin.rotary import BatchDataError, QuerySpecError
from spark_plugin.rotary import __main__ as cli
from spark_plugin.rotary.criteria import CriterionError
from spark_plugin.rotary.spec import TABLES

PROJECT = Path(__file__).resolve().parents[2]


@pytest.fixture
def data(tmp_path) -> Path:
    """A folder shaped like TPC-H data (a sub-folder per table): enough for every check before Spark."""
    for table in TABLES:
        (tmp_path / "tpch" / table).mkdir(parents=True)
    return tmp_path / "tpch"


def args(*argv) -> argparse.Namespace:
    """``run ARGV`` parsed as the command line parses it."""
    return cli.build_parser().parse_args(["run", *argv])


@pytest.mark.parametrize("argv, error, message", [
    (["6", "--until", "UNTIL ACC >= 2 WITHIN -5 SECONDS"], CriterionError,
     "--until 'UNTIL ACC >= 2 WITHIN -5 SECONDS': accuracy 2 is outside 0-1; WITHIN -5 SECONDS: a time must be "
     "positive. Write UNTIL ACC >= A [WITHIN N SECONDS|EPOCHS] with 0 < A <= 1, e.g. "
     "'UNTIL ACC >= 0.95 WITHIN 360 SECONDS'."),
    (["2"], QuerySpecError, "TPC-H Q2 has no progressive spec; supported: Q1, Q3"),
    (["6", "--batches", "1"], SparkrmError, "--batches must be a whole number >= 2, got 1"),
    (["6", "--confidence", "95"], SparkrmError, "--confidence must lie between 0 and 1 (exclusive), got 95; e.g. 0.95"),
    (["6", "--window", "1"], SparkrmError, "--window must be a whole number >= 2 (snapshots compared), got 1"),
    (["6", "--master", "local[two]"], SparkrmError, "--master 'local[two]' is not a Spark master URL: use local[*], "
                                                    "local[N], local-cluster[E,C,M] or spark://host:port"),
    (["--resume", "{tmp}"], SparkrmError, "--resume {tmp} is not a progressive query checkpoint: [Errno 2] No such "
                                          "file or directory: '{tmp}/state.json'; give a folder written by "
                                          "--checkpoint"),
    (["6", "--checkpoint", "{data}/lineitem/x/y"], None, None),  # a folder to create: accepted
])
def test_check_refuses_each_bad_argument_in_one_line(data, tmp_path, argv, error, message):
    argv = [a.format(tmp=tmp_path, data=data) for a in argv]
    parsed = args(*argv, *([] if "--resume" in argv else ["--data", str(data)]))
    if error is None:
        cli.check(parsed)
        return
    with pytest.raises(error) as refused:
        cli.check(parsed)
    assert str(refused.value).startswith(message.format(tmp=tmp_path)) and "\n" not in str(refused.value)


def test_data_folders_and_checkpoint_paths_are_checked(data, tmp_path):
    with pytest.raises(BatchDataError, match=r"nowhere is not a folder; point at TPC-H Parquet data"):
        cli.check(args("6", "--data", str(tmp_path / "nowhere")))
    (data / "lineitem").rmdir()
    with pytest.raises(BatchDataError, match=r"lacks TPC-H table folder\(s\) \['lineitem'\]"):
        cli.check(args("6", "--data", str(data)))
    (data / "lineitem").mkdir()
    (tmp_path / "a-file").write_text("")
    with pytest.raises(SparkrmError, match=r"--checkpoint \S+a-file is a file; give a folder"):
        cli.check(args("6", "--data", str(data), "--checkpoint", str(tmp_path / "a-file")))
    with pytest.raises(SparkrmError, match=r"--checkpoint \S+a-file/ck cannot be written \(\S+a-file is not a "
                                           r"writable folder\); choose another folder"):
        cli.check(args("6", "--data", str(data), "--checkpoint", str(tmp_path / "a-file" / "ck")))


def test_a_checkpoint_whose_data_is_gone_is_refused_on_resume(data, tmp_path):
    import json

    (tmp_path / "ck").mkdir()
    state = {"query": 6, "data": str(tmp_path / "gone"), "batches": 4, "seed": 0, "order_seed": 0, "order": [],
             "confidence": 0.95, "elapsed_s": 0.0, "totals": None, "batches_done": 0}
    (tmp_path / "ck" / "state.json").write_text(json.dumps(state))
    with pytest.raises(SparkrmError, match=r"--resume \S+ck: its run cannot continue: \S+gone is not a folder"):
        cli.check(args("--resume", str(tmp_path / "ck")))


def test_a_checkpoint_resumes_only_with_the_command_that_wrote_it(tmp_path):
    import json

    base = {"batches": 4, "seed": 0, "order_seed": 0, "order": [], "confidence": 0.95, "elapsed_s": 0.0,
            "totals": None, "batches_done": 0}
    for name, source in (("plain", {"sql": "select count(*) from t"}), ("spec", {"query": 6, "data": "/x"})):
        (tmp_path / name).mkdir()
        (tmp_path / name / "state.json").write_text(json.dumps({**base, **source}))
    with pytest.raises(SparkrmError, match=r"holds a plain query's run: continue it with sql --resume"):
        cli.check(args("--resume", str(tmp_path / "plain")))
    sql = cli.build_parser().parse_args
    with pytest.raises(SparkrmError, match=r"holds a TPC-H spec's run: continue it with run --resume"):
        cli.check_sql(sql(["sql", "--resume", str(tmp_path / "spec")]))
    with pytest.raises(SparkrmError, match=r"continues its own query; leave the query out"):
        cli.check_sql(sql(["sql", "select 2", "--resume", str(tmp_path / "plain")]))
    resumed = sql(["sql", "--resume", str(tmp_path / "plain")])
    cli.check_sql(resumed)
    assert resumed.query == "select count(*) from t"


def _cli(tmp_path, *argv):
    """The command line in a subprocess whose SPARK_HOME only records that something tried to start Spark."""
    home = tmp_path / "spark-home"
    (home / "bin").mkdir(parents=True, exist_ok=True)
    submit = home / "bin" / "spark-submit"
    submit.write_text(f"#!/bin/sh\ntouch {tmp_path / 'spark-started'}\nexit 1\n")
    submit.chmod(0o755)
    env = {**os.environ, "SPARK_HOME": str(home), "PYTHONPATH": str(PROJECT)}
    run = subprocess.run([sys.executable, "-m", "spark_plugin.rotary", "run", *argv], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=300)
    return run, (tmp_path / "spark-started").exists()


@pytest.mark.parametrize("argv, message", [
    (["6", "--until", "UNTIL ACC >= 2 WITHIN -5 SECONDS"], "error: --until 'UNTIL ACC >= 2 WITHIN -5 SECONDS': "
                                                           "accuracy 2 is outside 0-1; WITHIN -5 SECONDS: a time"),
    (["6", "--batches", "x"], "error: argument --batches: invalid int value: 'x' (see python -m spark_plugin.rotary "
                              "run --help)"),
    (["1"], "error: run needs a query and --data (or --resume DIR)"),
])
def test_a_bad_argument_exits_2_in_one_line_without_starting_spark(tmp_path, data, argv, message):
    run, started = _cli(tmp_path, *argv, *(["--data", str(data)] if len(argv) > 1 else []))
    assert run.returncode == 2 and run.stderr.startswith(message) and run.stderr.count("\n") == 1, run.stderr
    assert not started


def test_good_arguments_do_reach_spark(tmp_path, data):
    """The control of the test above: the same command with good arguments does try to start Spark."""
    run, started = _cli(tmp_path, "6", "--data", str(data), "--until", "UNTIL ACC >= 0.9 WITHIN 5 SECONDS")
    assert started and run.returncode != 0, run.stderr[-2000:]


def test_a_spark_error_about_a_damaged_file_becomes_one_line_naming_the_file_and_the_fix(tmp_path):
    from spark_plugin.rotary.batches import damaged_file_error

    data = tmp_path / "sf1-parts4"
    spark_said = ("An error occurred while calling o127.parquet.\n: org.apache.spark.SparkException: "
                  "[FAILED_READ_FILE.NO_HINT] Encountered error while reading file file://{file}.  SQLSTATE: KD001\n"
                  "\tat org.apache.spark.sql.errors.QueryExecutionErrors$.cannotReadFilesError(...)\n"
                  "Caused by: java.lang.RuntimeException: file:{file} is not a Parquet file. Expected magic number "
                  "at tail, but found [86, 36, 0, 0]\n")
    error = damaged_file_error(spark_said.format(file=data / "lineitem" / "lineitem.2.parquet"), data)
    assert isinstance(error, BatchDataError) and isinstance(error, SparkrmError)
    assert str(error) == (f"{data}/lineitem/lineitem.2.parquet cannot be read: it is not a whole Parquet file "
                          f"(truncated or overwritten). The TPC-H data in {data} is damaged: generate it again "
                          "(`python -m benchmarks.tpch` notices the damage, or tpchgen-cli parquet) or point --data at "
                          "an intact copy.")
    copy = tmp_path / "sf1-parts4.batches20-seed0"
    in_copy = damaged_file_error(spark_said.format(file=copy / "orders" / "lineitem" / "_rotary_batch=3" / "p.parquet"),
                                 data)
    assert str(in_copy).endswith(f"It belongs to Rotary's batched copy of {data}: delete {copy} and run again (it is "
                                 "made again from the data).")
    assert damaged_file_error("java.lang.OutOfMemoryError: Java heap space", data) is None
    assert damaged_file_error(f"[FAILED_READ_FILE.FILE_NOT_EXIST] file:{data}/x.parquet does not exist", data) is None
