"""``python -m spark_plugin.rotary run``: bad arguments are refused in one line before any JVM starts (no Spark).

The command line's ``main`` runs in this process (:mod:`tests.rotary.cli_runner`); one test runs it as the
``python -m`` process too.
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

import pytest

from spark_plugin import rotary
from spark_plugin.errors import SparkrmError
from spark_plugin.rotary import BatchDataError, QuerySpecError
from spark_plugin.rotary import __main__ as cli
from spark_plugin.shared.criteria import CriterionError
from spark_plugin.rotary.spec import TABLES
from tests.rotary.cli_runner import run_cli, run_cli_process


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


@pytest.mark.parametrize("argv, message", [
    (["6", "--confidence", "95"], "error: --confidence must be a finite number > 0 and < 1. Got 95.0. Pass e.g. 0.95."),
    (["6", "--window", "1"], "error: --window must be a whole number in [2, 1000]. Got 1. Pass e.g. 3 (the snapshots "
                             "the accuracy envelope compares)."),
    (["6", "--seed", "-1"], "error: --seed must be a whole number in [0, 2147483647]. Got -1. Pass e.g. 0."),
])
def test_a_number_outside_its_rule_is_refused_as_it_is_parsed(capsys, argv, message):
    with pytest.raises(SystemExit) as refused:
        args(*argv)
    assert refused.value.code == 2 and capsys.readouterr().err == f"{message} (see python -m spark_plugin.rotary run " \
                                                                 "--help)\n"


def test_data_folders_and_checkpoint_paths_are_checked(data, tmp_path):
    with pytest.raises(BatchDataError, match=r"nowhere is not a folder; point at TPC-H Parquet data"):
        cli.check(args("6", "--data", str(tmp_path / "nowhere")))
    (data / "lineitem").rmdir()
    with pytest.raises(BatchDataError, match=r"lacks TPC-H table folder\(s\) \['lineitem'\]"):
        cli.check(args("6", "--data", str(data)))
    (data / "lineitem").mkdir()
    (tmp_path / "a-file").write_text("")
    with pytest.raises(SparkrmError, match=r"--checkpoint \S+a-file is a file, not a folder: sparkrm writes a Rotary "
                                           r"checkpoint as a folder"):
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
    plain = {"sql": "select count(*) from t", "batch_key": [], "layouts": False, "tables": "", "growth": 4.0}
    for name, source in (("plain", plain), ("spec", {"query": 6, "data": "/x"})):
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


def _cli(tmp_path, *argv, command="run", **env):
    """The command line (``command ARGV``), its ``main`` called in this process (:func:`.cli_runner.run_cli`)
    with a SPARK_HOME that only records that something tried to start Spark; ``env`` adds environment
    variables. Returns what it printed and its exit status, and whether it tried to start Spark."""
    return run_cli(tmp_path, command, *argv, **env)


@pytest.mark.parametrize("argv, message", [
    (["6", "--until", "UNTIL ACC >= 2 WITHIN -5 SECONDS"], "error: --until 'UNTIL ACC >= 2 WITHIN -5 SECONDS': "
                                                           "accuracy 2 is outside 0-1; WITHIN -5 SECONDS: a time"),
    (["6", "--batches", "x"], "error: --batches must be a whole number in [2, 1000]. Got 'x'. "
                              "Pass e.g. 20"),
    (["6", "--batches", "1"], "error: --batches must be a whole number in [2, 1000]. Got 1."),
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


def test_the_process_refuses_in_one_line_without_starting_spark_and_good_arguments_reach_it(tmp_path, data):
    """The two tests above through ``python -m spark_plugin.rotary`` itself: the entry point, its exit status,
    the whole process's stderr one line (nothing printed on import), and the same spark-submit reached."""
    run, started = run_cli_process(tmp_path, "run", "6", "--batches", "1", "--data", str(data))
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    assert run.stderr.startswith("error: --batches must be a whole number in [2, 1000]. Got 1."), run.stderr
    assert not started
    run, started = run_cli_process(tmp_path, "run", "6", "--data", str(data))
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


Q = "select store, sum(amount) from sales group by store"


@pytest.fixture
def sales(tmp_path) -> Path:
    """Where the query's table lies: enough for every check before Spark (which would read it)."""
    (tmp_path / "sales").mkdir()
    return tmp_path / "sales"


def _users_files(folder: Path) -> dict:
    """A folder of the user's (a thesis, a folder of photos): each file's bytes, to check nothing changed."""
    (folder / "photos").mkdir(parents=True)
    (folder / "thesis.tex").write_text("\\documentclass{article}\n")
    (folder / "photos" / "beach.jpg").write_bytes(bytes(range(256)))
    return _snapshot(folder)


def _snapshot(folder: Path) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _one_line(run, *parts):
    assert run.returncode == 2 and run.stderr.startswith("error: ") and run.stderr.count("\n") == 1, run.stderr
    assert "Traceback" not in run.stderr and all(part in run.stderr for part in parts), run.stderr


@pytest.mark.parametrize("staging", [False, True], ids=["the folder", "its staging folder"])
def test_a_checkpoint_folder_holding_the_users_files_is_refused_before_spark_starts(tmp_path, sales, data, staging):
    target = tmp_path / "mine"
    kept = _users_files(tmp_path / ("mine.tmp" if staging else "mine"))
    for command, argv in (("sql", [Q, "--table", f"sales={sales}"]), ("run", ["6", "--data", str(data)])):
        run, started = _cli(tmp_path, *argv, "--checkpoint", str(target), command=command)
        _one_line(run, "--checkpoint", "holds files sparkrm did not write (photos, thesis.tex)")
        assert not started
    assert _snapshot(tmp_path / ("mine.tmp" if staging else "mine")) == kept


def test_a_checkpoint_is_refused_in_the_api_too_where_the_users_files_are(tmp_path):
    from spark_plugin.errors import NotOursError
    from spark_plugin.rotary.engine import check_checkpoint

    kept = _users_files(tmp_path / "mine")
    with pytest.raises(NotOursError, match=r"mine holds files sparkrm did not write \(photos, thesis.tex\)"):
        check_checkpoint(tmp_path / "mine")
    assert _snapshot(tmp_path / "mine") == kept
    assert check_checkpoint(tmp_path / "new" / "checkpoint") == tmp_path / "new" / "checkpoint"  # missing: fine


@pytest.mark.parametrize("command", ["run", "sql", "prepare"])
def test_a_batch_count_beyond_the_bound_is_one_line_before_spark_starts(tmp_path, data, sales, command):
    argv = {"run": ["6", "--data", str(data)], "sql": [Q, "--table", f"sales={sales}"],
            "prepare": [str(sales), "--key", "store"]}[command]
    run, started = _cli(tmp_path, *argv, "--batches", "100000", command=command)
    _one_line(run, "--batches must be a whole number in [2, 1000]. Got 100000. Pass e.g. 20")
    assert not started


def test_a_batch_count_beyond_the_bound_is_refused_by_every_api_before_it_touches_spark(tmp_path, data):
    from spark_plugin.errors import UsageError
    from spark_plugin.rotary.layouts import prepare_table

    refused = r"batches must be a whole number in \[2, 1000\]. Got 100000"
    for call in (lambda: rotary.progressive_query(None, Q, batches=100000),
                 lambda: rotary.prepare(None, data, batches=100000),
                 lambda: prepare_table(None, str(data), "store", batches=100000, root=tmp_path / "layouts")):
        with pytest.raises(UsageError, match=refused):
            call()


def test_a_plot_path_is_checked_before_spark_starts_and_its_missing_folder_is_made(tmp_path, sales):
    (tmp_path / "dir.png").mkdir()
    run, started = _cli(tmp_path, Q, "--table", f"sales={sales}", "--plot", str(tmp_path / "dir.png"), command="sql")
    _one_line(run, f"--plot {tmp_path / 'dir.png'} is a folder")
    assert not started
    (tmp_path / "mine.png").write_bytes(b"\x89PNG the user's own picture")
    run, started = _cli(tmp_path, Q, "--table", f"sales={sales}", "--plot", str(tmp_path / "mine.png"), command="sql")
    _one_line(run, "mine.png exists and sparkrm did not write it")
    assert not started and (tmp_path / "mine.png").read_bytes() == b"\x89PNG the user's own picture"
    run, started = _cli(tmp_path, Q, "--table", f"sales={sales}", "--plot", str(tmp_path / "new" / "c.png"),
                        command="sql")
    assert started and (tmp_path / "new").is_dir(), run.stderr[-2000:]


def test_convergence_plot_makes_its_missing_folder_and_overwrites_only_its_own_plot(tmp_path):
    import pandas as pd

    from spark_plugin.errors import NotOursError
    from spark_plugin.rotary.engine import Snapshot

    result = pd.DataFrame({"store": [1, 2], "total": [10.0, 20.0]})
    snapshots = [Snapshot(b, 2, b * 0.5, result * b / 2, result.assign(total=[1.0, 2.0]), 0.95) for b in (1, 2)]
    path = rotary.convergence_plot(snapshots, ["total"], tmp_path / "missing" / "c.png")
    assert path.stat().st_size > 10_000
    assert rotary.convergence_plot(snapshots, ["total"], path) == path  # its own plot: drawn again
    (tmp_path / "photo.png").write_bytes(b"\x89PNG not sparkrm's")
    with pytest.raises(NotOursError, match="photo.png exists and sparkrm did not write it"):
        rotary.convergence_plot(snapshots, ["total"], tmp_path / "photo.png")
    assert (tmp_path / "photo.png").read_bytes() == b"\x89PNG not sparkrm's"


def test_a_layouts_folder_that_cannot_be_written_or_is_the_users_is_one_line_before_spark_starts(tmp_path, sales):
    (tmp_path / "a-file").write_text("")
    home = tmp_path / "a-file"  # a home that cannot hold ~/.cache, as a read-only one
    run, started = _cli(tmp_path, str(sales), "--key", "store", command="prepare", HOME=str(home))
    _one_line(run, f"layouts folder {home}/.cache/sparkrm/rotary/layouts cannot be written",
              "pass --layouts (root= in Python) a writable folder")
    assert not started
    run, started = _cli(tmp_path, str(sales), "--key", "store", "--layouts", str(home / "layouts"), command="prepare")
    _one_line(run, f"--layouts {home}/layouts cannot be written", "pass --layouts")
    kept = _users_files(tmp_path / "documents")
    run, started = _cli(tmp_path, str(sales), "--key", "store", "--layouts", str(tmp_path / "documents"),
                        command="prepare")
    _one_line(run, f"--layouts {tmp_path / 'documents'} holds files sparkrm did not write (photos, thesis.tex)")
    assert "delete" not in run.stderr  # never advised for a folder holding the user's files
    assert not started and _snapshot(tmp_path / "documents") == kept


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_layouts_folder_is_one_line_before_spark_starts(tmp_path, sales):
    (tmp_path / "read-only").mkdir(mode=0o555)
    run, started = _cli(tmp_path, str(sales), "--key", "store", "--layouts", str(tmp_path / "read-only" / "layouts"),
                        command="prepare")
    _one_line(run, f"--layouts {tmp_path}/read-only/layouts cannot be written", "pass --layouts")
    assert not started


def test_resuming_a_checkpoint_that_lacks_a_field_is_one_line_before_spark_starts(tmp_path):
    import json

    state = {"sql": Q, "layouts": False, "tables": "", "growth": 4.0, "batches": 4, "seed": 0, "order_seed": 0,
             "order": [0, 1, 2, 3], "confidence": 0.95, "elapsed_s": 1.0, "totals": None, "batches_done": 0}
    (tmp_path / "ck").mkdir()
    (tmp_path / "ck" / "state.json").write_text(json.dumps(state))  # no batch_key
    run, started = _cli(tmp_path, "--resume", str(tmp_path / "ck"), command="sql")
    _one_line(run, "--resume", "state.json lacks ['batch_key']", "give a folder written by sql --checkpoint")
    assert not started
    (tmp_path / "ck" / "state.json").write_text(json.dumps({**state, "batch_key": [], "totals": ["s"]}))
    run, started = _cli(tmp_path, "--resume", str(tmp_path / "ck"), command="sql")
    _one_line(run, "totals.parquet is missing")
    assert not started


def test_the_batched_copy_beside_the_data_never_replaces_a_folder_of_the_users(tmp_path, data):
    from spark_plugin.errors import NotOursError

    copy = tmp_path / "tpch.batches4-seed0"  # where Rotary would write the TPC-H batched copy
    kept = _users_files(copy)
    with pytest.raises(NotOursError, match=r"tpch.batches4-seed0 holds files sparkrm did not write \(photos, "
                                           r"thesis.tex\)") as refused:
        rotary.prepare(None, data, batches=4)  # refused before Spark would be asked to write
    assert _snapshot(copy) == kept and "delete" not in str(refused.value)
    shutil.rmtree(copy)
    (copy / "orders" / "lineitem").mkdir(parents=True)  # a copy an earlier sparkrm wrote: no marker
    with pytest.raises(NotOursError, match=rf"holds no .sparkrm-owner marker.* delete {copy}: Rotary makes it again"):
        rotary.prepare(None, data, batches=4)
    assert (copy / "orders" / "lineitem").is_dir()
