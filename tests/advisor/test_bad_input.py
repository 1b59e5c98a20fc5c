"""The advisor's bad inputs, each refused in one line before any file is read: its counts (command line and API,
by one rule), its plot path, and telemetry files whose schema line is malformed."""

import json
import subprocess
import sys

import pytest

from spark_plugin.advisor import Run, recommend
from spark_plugin.advisor.__main__ import main
from spark_plugin.errors import NotOursError, UsageError

RUNS = [Run(m, 200, 5 + 80 / m + 2 * m) for m in (1, 2, 4)]


@pytest.mark.parametrize("kwargs, message", [
    (dict(cores_per_executor=-2), r"cores_per_executor must be a whole number in \[1, 1024\]\. Got -2\. Pass the "
                                  r"cores of one executor \(spark\.executor\.cores\), e\.g\. 4\."),
    (dict(cores_per_executor=0), r"cores_per_executor must be a whole number in \[1, 1024\]\. Got 0\."),
    (dict(cores_per_executor=2.5), r"cores_per_executor must be a whole number in \[1, 1024\]\. Got 2\.5\."),
    (dict(max_slots=0), r"max_slots must be a whole number in \[1, 100000\]\. Got 0\. Pass the cluster's task slots"),
    (dict(max_slots=10**7), r"max_slots must be a whole number in \[1, 100000\]\. Got 10000000\."),
    (dict(within=-0.05), r"within must be a finite number >= 0\. Got -0\.05\."),
    (dict(within=float("nan")), r"within must be a finite number >= 0\. Got nan\."),
    (dict(target="slowest"), r"target 'slowest': give one of fastest, cheapest"),
])
def test_recommend_refuses_a_bad_argument_in_one_line(kwargs, message):
    with pytest.raises(UsageError, match=f"^{message}"):
        recommend(RUNS, **kwargs)


def test_a_count_of_executors_divides_by_the_cores_it_was_given():
    assert recommend(RUNS, cores_per_executor=4, max_slots=8).executors == 2


@pytest.mark.parametrize("option, value, message", [
    ("--cores-per-executor", "-2", "--cores-per-executor must be a whole number in [1, 1024]. Got -2."),
    ("--cores-per-executor", "0", "--cores-per-executor must be a whole number in [1, 1024]. Got 0."),
    ("--max-slots", "0", "--max-slots must be a whole number in [1, 100000]. Got 0."),
    ("--within", "-5", "--within must be a finite number >= 0. Got -5.0."),
    ("--within", "ten", "--within must be a finite number >= 0. Got 'ten'."),
])
def test_the_command_refuses_a_bad_count_as_it_parses(tmp_path, capsys, option, value, message):
    with pytest.raises(SystemExit) as exited:
        main([str(tmp_path / "not read"), option, value])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.count("\n") == 1
    assert err.startswith(f"error: {message}")


def test_a_zero_core_executor_is_one_line_not_a_traceback(tmp_path):
    out = subprocess.run([sys.executable, "-m", "spark_plugin.advisor", str(tmp_path), "--cores-per-executor", "0"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


def schema_line(tmp_path, header: str):
    path = tmp_path / "app-1.telemetry.jsonl"
    path.write_text(header + "\n")
    return path


def test_a_plot_path_that_is_a_folder_or_a_users_file_is_refused_before_any_file_is_read(tmp_path, capsys):
    unreadable = schema_line(tmp_path, "{}")  # would be refused too, were it read first
    (tmp_path / "x.png").mkdir()
    assert main([str(unreadable), "--plot", str(tmp_path / "x.png")]) == 2
    assert capsys.readouterr().err == (f"advisor: --plot {tmp_path / 'x.png'} is a folder: give the path of a PNG "
                                       f"plot to write, e.g. {tmp_path / 'x.png' / 'out.png'}.\n")
    theirs = tmp_path / "holiday.png"
    theirs.write_bytes(b"\x89PNG not sparkrm's")
    assert main([str(unreadable), "--plot", str(theirs)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"advisor: --plot {theirs} exists and sparkrm did not write it")
    assert theirs.read_bytes() == b"\x89PNG not sparkrm's"


@pytest.mark.parametrize("header, why", [
    ('{"schemas":{}}', "its schema line declares no record type"),
    ('{"schemas":[]}', "its schema line's \"schemas\" is list, not an object of record types"),
    ('{"schemas":{"job":null}}', "its schema line's 'job' schema is not a list of [name, type] pairs"),
    ('{"seq":0,"type":"schema","schemas":{"ta', "is not a sparkrm telemetry file"),
    (json.dumps({"schemas": {"task": [["taskId", "int"]]}}),
     "its schema line declares no job, stage, executor records, which the advisor reads. Pass a telemetry file "
     "this sparkrm version wrote, or the application's Spark event log."),
    (json.dumps({"schemas": {t: [["id", "int"]] for t in ("job", "stage", "executor")}})
     + '\n{"seq":1,"type":"job","id":1}', "its records lack the field 'jobGroup', which the advisor reads."),
])
def test_a_telemetry_file_with_a_malformed_schema_line_is_one_line_naming_it(tmp_path, capsys, header, why):
    path = schema_line(tmp_path, header)
    assert main([str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"advisor: {path}") and why in err


def test_the_plot_is_refused_in_the_api_too(tmp_path):
    from spark_plugin.advisor.__main__ import plot

    (tmp_path / "x.png").mkdir()
    with pytest.raises(NotOursError, match="--plot .*x.png is a folder"):
        plot(sorted(RUNS, key=lambda r: r.slots), recommend(RUNS), tmp_path / "x.png", None)
