"""Runs read from the telemetry files of real applications at one and two executors, and from their event logs:
an application named by both counts once."""

import pytest

import spark_plugin
from spark_plugin.advisor import collect_runs, load_runs, recommend
from spark_plugin.advisor.__main__ import main
from benchmarks.common import stop_and_clean

pytestmark = pytest.mark.spark


def run_job(master: str, folder) -> None:
    """One application writing its telemetry file and its event log (Spark's defaults: a rolling zstd folder)."""
    spark = spark_plugin.session(master, ["telemetry"], app_name="advisor-test",
                                 conf={"spark.sparkrm.telemetry.dir": str(folder / "telemetry"),
                                       "spark.eventLog.enabled": "true", "spark.eventLog.dir": str(folder / "events")})
    app_id = spark.sparkContext.applicationId
    try:
        sc = spark.sparkContext
        sc.setJobGroup("squares", "sum of squares")
        assert sc.parallelize(range(1000), 8).map(lambda x: x * x).sum() == sum(x * x for x in range(1000))
        sc.setJobGroup("other", "not modelled")
        sc.parallelize(range(10), 2).count()
    finally:
        stop_and_clean(spark, app_id)


@pytest.fixture(scope="module")
def apps(tmp_path_factory):
    """Two applications, at one and two executors: ``(telemetry files, event logs)``, each in that order."""
    root = tmp_path_factory.mktemp("apps")
    for n in (1, 2):
        (root / str(n) / "events").mkdir(parents=True)
        run_job(f"local-cluster[{n},1,1024]", root / str(n))
    telemetry = [next((root / str(n) / "telemetry").glob("*.telemetry.jsonl")) for n in (1, 2)]
    logs = [next((root / str(n) / "events").iterdir()) for n in (1, 2)]
    return telemetry, logs


def test_each_application_is_one_run_of_the_job_group(apps):
    telemetry, _ = apps
    runs = load_runs(telemetry, job="squares")
    assert [(r.slots, r.tasks, r.stage_tasks) for r in runs] == [(1, 8, (8,)), (2, 8, (8,))]
    assert all(r.wall_s > 0 for r in runs)
    advice = recommend(runs)
    assert advice.holdout_error == {"usba": None, "ipso": None, "waves": None} and advice.model == "ipso"


def test_an_application_named_by_its_telemetry_and_its_event_log_counts_once(apps):
    """Counted twice, each run would be predicted from its twin: a held-out error that looks exact."""
    telemetry, logs = apps
    found = collect_runs([*telemetry, *logs], job="squares")
    assert [(r.slots, r.source) for r in found.runs] == [(1, str(telemetry[0])), (2, str(telemetry[1]))]
    assert [source for source, _ in found.notes] == [str(log) for log in logs]
    for (_, why), kept in zip(found.notes, telemetry):
        assert why == (f"set aside as a duplicate: it holds the same application {kept.name.split('.')[0]} as "
                       f"{kept}, which is counted (once)")
    assert recommend(found.runs).holdout_error["ipso"] is None  # two runs: nothing is held out
    mixed = collect_runs([logs[1], telemetry[0], telemetry[1]], job="squares")  # any mix, any order
    assert sorted(r.slots for r in mixed.runs) == [1, 2] and len(mixed.notes) == 1
    assert collect_runs([telemetry[0], logs[1]], job="squares").notes == []  # two applications: nothing set aside


def test_the_command_says_which_files_it_set_aside(apps, capsys):
    telemetry, logs = apps
    assert main([*map(str, telemetry + logs), "--job", "squares"]) == 0
    out = capsys.readouterr().out
    assert "job 'squares': 2 runs" in out and "n/a (fewer than 3 runs)" in out
    assert [line.split()[1] for line in out.splitlines() if "set aside as a duplicate" in line] == list(map(str, logs))


def test_a_telemetry_file_cut_while_written_counts_what_precedes_the_cut_and_says_so(apps, tmp_path, caplog):
    """A killed application's ``.inprogress`` file may end in half a record: skipped (logged with its size), the
    run counted from the complete records, and the note says the application had not ended."""
    whole = apps[0][0]
    cut = tmp_path / f"{whole.name}.inprogress"
    text = whole.read_bytes()
    cut.write_bytes(text[:text.rstrip(b"\n").rfind(b"\n") + 20])  # the last record cut after 19 bytes
    with caplog.at_level("WARNING"):
        found = collect_runs([cut], job="squares")
    assert [r.slots for r in found.runs] == [1] and "skipped its last 19 bytes" in caplog.text
    assert found.notes == [(str(cut), "counts 1 of its 1 job(s) of group 'squares': the others failed or did not "
                                      "finish; the application had not ended (still running, or killed)")]
