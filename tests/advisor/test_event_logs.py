"""The advisor reads the event logs Spark itself writes: rolling folders and single files, each codec, unfinished
applications and failed jobs, a folder of many applications; never a hand-written imitation."""

import json
import shutil
import subprocess
import sys

import pytest

from spark_plugin.advisor import collect_runs, collect_runs_of, load_runs
from spark_plugin.errors import SparkrmError
from benchmarks.common import shutdown_driver_jvm

pytestmark = pytest.mark.spark

#: (name, master, rolling, codec): "default" leaves Spark's own setting (rolling on, zstd); "none" turns
#: compression off. Every application sets every key, so none inherits the previous one's in the shared JVM.
#: default-1 also has a failed job, and a copy of its log taken before it ended is "killed".
APPS = [("default-1", "local[1]", None, None), ("default-2", "local[2]", None, None),
        ("lz4-file", "local[2]", "false", "lz4"), ("snappy-file", "local[1]", "false", "snappy"),
        ("zstd-file", "local[2]", "false", "zstd"), ("plain-rolling", "local[1]", "true", "none")]


def eventlog_conf(folder, rolling, codec) -> dict:
    from pyspark import SparkConf

    defaults = SparkConf(loadDefaults=False)  # Spark's defaults, read from Spark rather than assumed
    conf = {"spark.eventLog.enabled": "true", "spark.eventLog.dir": str(folder),
            "spark.eventLog.rolling.enabled": rolling or defaults.get("spark.eventLog.rolling.enabled", "true"),
            "spark.eventLog.compress": "false" if codec == "none" else "true"}
    conf["spark.eventLog.compression.codec"] = codec if codec not in (None, "none") else "zstd"
    return conf


def run_app(folder, master, rolling, codec, *, failing_job=False, copy_while_running=None):
    """One application writing its event log under ``folder``: job group ``squares`` (a shuffle: 6 map and 6
    reduce tasks), and group ``other`` (2 tasks); optionally a failed job in ``squares`` and a copy of the log
    taken before it ends. Its jobs are DataFrame jobs, which start no Python workers: an RDD's lambdas cost
    each application about 2 s more, to start its workers and to stop them."""
    from pyspark.errors import SparkRuntimeException
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName("advisor-event-logs")
    # adaptive execution off: the aggregation is one job of two stages of six tasks, not coalesced
    conf = {**eventlog_conf(folder, rolling, codec), "spark.sql.adaptive.enabled": "false",
            "spark.sql.shuffle.partitions": "6"}
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    sc = spark.sparkContext
    try:
        sc.setJobGroup("squares", "sum of squares by key")
        squares = spark.range(0, 2000, 1, 6).selectExpr("id % 7 AS k", "id * id AS s").groupBy("k").sum("s")
        assert dict(squares.collect())[0] == sum(x * x for x in range(0, 2000, 7))
        if failing_job:
            with pytest.raises(SparkRuntimeException, match="a failed job"):
                spark.range(0, 4, 1, 2).selectExpr("raise_error('a failed job')").collect()
        sc.setJobGroup("other", "not modelled")
        assert len(spark.range(0, 10, 1, 2).collect()) == 10
        if copy_while_running is not None:
            log = next(folder.iterdir())
            (shutil.copytree if log.is_dir() else shutil.copy)(log, copy_while_running / log.name)
    finally:
        spark.stop()


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = tmp_path_factory.mktemp("event-logs")
    try:
        (root / "killed").mkdir()
        for name, master, rolling, codec in APPS:
            (root / name).mkdir()
            failed = name == "default-1"
            run_app(root / name, master, rolling, codec, failing_job=failed,
                    copy_while_running=root / "killed" if failed else None)
    finally:
        shutdown_driver_jvm()
    return root


def only_entry(folder):
    (entry,) = [p for p in folder.iterdir() if not p.name.startswith(".")]
    return entry


def test_spark_defaults_write_a_rolling_zstd_folder_and_every_codec_and_single_file_reads_as_the_same_run(logs):
    """Each log is one run of its own (read together: the reader's JVM starts once)."""
    log = only_entry(logs / "default-2")
    assert log.is_dir() and log.name.startswith("eventlog_v2_")
    assert [p.suffix for p in log.glob("events_*")] == [".zstd"]
    slots = {"default-2": 2, "lz4-file": 2, "snappy-file": 1, "zstd-file": 2, "plain-rolling": 1}
    found = collect_runs([only_entry(logs / name) for name in slots], job="squares")
    assert not found.left_out and not found.notes
    runs = {name: run for name in slots for run in found.runs if run.source == str(only_entry(logs / name))}
    assert {name: (run.slots, run.tasks, run.stage_tasks) for name, run in runs.items()} == {
        name: (n, 12, (6, 6)) for name, n in slots.items()}
    assert all(run.wall_s > 0 for run in runs.values())


def test_a_folder_of_many_applications_gives_one_run_each_and_job_filters(logs):
    folder = logs / "all"
    folder.mkdir()
    for name, *_ in APPS:
        entry = only_entry(logs / name)
        (shutil.copytree if entry.is_dir() else shutil.copy)(entry, folder / entry.name)
    found = collect_runs_of([folder], ["squares", "other"])  # each job of each log, from one read
    assert sorted(r.slots for r in found["squares"].runs) == [1, 1, 1, 2, 2, 2] and not found["squares"].left_out
    assert {r.tasks for r in found["squares"].runs} == {12}
    assert {r.tasks for r in found["other"].runs} == {2}
    with pytest.raises(SparkrmError, match=r"No run of job group 'q9' found\. .*no finished job of group 'q9'; "
                                           r"its groups: other, squares"):
        load_runs([folder], job="q9")


def test_a_failed_job_is_left_out_and_said(logs):
    found = collect_runs([only_entry(logs / "default-1")], job="squares")
    (run,) = found.runs
    assert run.stage_tasks == (6, 6)
    (note,) = found.notes
    assert "counts 1 of its 2 job(s) of group 'squares'" in note[1]


def test_an_unfinished_application_counts_its_finished_jobs_and_says_so(logs):
    log = only_entry(logs / "killed")
    found = collect_runs([log], job="squares")
    (run,) = found.runs
    assert run.stage_tasks == (6, 6)
    (note,) = found.notes
    assert "the others failed or did not finish" in note[1]
    assert "had not ended" in note[1] or "breaks off" in note[1]


def test_a_cut_compressed_log_counts_what_precedes_the_break_and_a_damaged_plain_log_is_left_out(logs, tmp_path):
    log = only_entry(logs / "zstd-file")
    cut = tmp_path / log.name
    cut.write_bytes(log.read_bytes()[: log.stat().st_size * 3 // 4])
    intact = only_entry(logs / "plain-rolling")
    damaged = tmp_path / "damaged" / intact.name
    shutil.copytree(intact, damaged)
    events = next(damaged.glob("events_*"))
    lines = events.read_text().splitlines()
    events.write_text("\n".join(lines[:5] + ["{not json"] + lines[5:]) + "\n")
    lz4 = only_entry(logs / "lz4-file")
    found = collect_runs_of([cut, damaged, lz4], ["other", "squares"])  # the three logs read once

    # what precedes the break counts, and says so (or the log is left out, saying why)
    other = found["other"]
    assert any("breaks off" in reason for source, reason in other.left_out + other.notes if source == str(cut))
    squares = found["squares"]
    assert [run.source for run in squares.runs if run.source != str(cut)] == [str(lz4)]
    (left,) = [reason for source, reason in squares.left_out if source == str(damaged)]
    assert "line " in left and "the log is damaged" in left


def test_the_command_reads_an_event_log_dir_as_a_user_passes_it(logs):
    """``python -m spark_plugin.advisor <eventLog.dir>/* --job G`` on default Spark 4 logs."""
    entries = [str(only_entry(logs / name)) for name in ("default-1", "default-2")]
    result = subprocess.run([sys.executable, "-m", "spark_plugin.advisor", *entries, "--job", "squares"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "job 'squares': 2 runs" in result.stdout and "recommended (fastest)" in result.stdout
    assert "counts 1 of its 2 job(s)" in result.stdout
    bad = subprocess.run([sys.executable, "-m", "spark_plugin.advisor", str(logs / "default-1"), "--job", "nope"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert bad.stderr.startswith("advisor: No run of job group 'nope' found.")


def test_the_command_prints_the_runs_the_fit_and_the_recommendation_and_plots(logs, tmp_path, capsys):
    from spark_plugin.advisor.__main__ import main

    entries = [str(only_entry(logs / name)) for name, *_ in APPS]
    png = tmp_path / "not yet made" / "speedup.png"  # its folder is created
    assert main([*entries, "--job", "squares", "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "job 'squares': 6 runs" in out and "held-out error" in out and "scaling type" in out
    assert "--conf spark.executor.instances=" in out and "partitions: the runs' own (12 tasks" in out
    assert png.stat().st_size > 0
    assert main([*entries, "--job", "squares", "--plot", str(png)]) == 0  # a plot it wrote may be overwritten
    assert f"plot: {png}" in capsys.readouterr().out


def test_the_command_says_in_one_line_why_it_cannot_advise(logs, capsys):
    from spark_plugin.advisor.__main__ import main

    assert main([str(only_entry(logs / "default-2")), "--job", "squares"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("advisor: the advisor needs runs at two or more slot counts") and "\n" not in err


def test_a_spark_event_log_whose_events_lack_a_field_is_left_out_in_one_line(logs, tmp_path, capsys):
    """The log Spark wrote, with the submission time taken out of its job events (another format, as an older or
    foreign writer might leave), and a JSON-lines file that is no event log though named like an unfinished one."""
    from spark_plugin.advisor.__main__ import main

    source = only_entry(logs / "plain-rolling")
    shutil.copytree(source, tmp_path / source.name)
    events = next((tmp_path / source.name).glob("events_*"))
    lines = [json.loads(line) for line in events.read_text().splitlines()]
    events.write_text("".join(json.dumps({k: v for k, v in e.items() if k != "Submission Time"},
                                         separators=(",", ":")) + "\n" for e in lines))
    other = tmp_path / "metrics.jsonl.inprogress"
    other.write_text('{"time": 1, "value": 2}\n')
    found = collect_runs([tmp_path / source.name, other])
    assert not found.runs and sorted(found.left_out) == [
        (str(tmp_path / source.name), "its SparkListenerJobStart event lacks the field 'Submission Time' (a whole "
                                      "number): not a Spark event log in the format the advisor reads (Spark 3-4's "
                                      "JSON events); pass the log Spark wrote under spark.eventLog.dir"),
        (str(other), "neither a sparkrm telemetry file nor a Spark event log: pass files written under "
                     "spark.sparkrm.telemetry.dir or spark.eventLog.dir")]
    assert main([str(tmp_path / source.name)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{tmp_path / source.name}: its SparkListenerJobStart event lacks" in err
