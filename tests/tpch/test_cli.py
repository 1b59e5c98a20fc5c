"""``python -m benchmarks.tpch``: bad input fails clearly, and a real run validates all 22 queries."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.tpch import cli, report
from benchmarks.tpch.data import ensure_dataset

PROJECT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("args,message", [
    (["--queries", "23"], "TPC-H has queries 1 to 22"),
    (["--queries", "5-3"], "--queries 5-3 is reversed: write 3-5."),
    (["--modes", "vanilla,turbo"], "Unknown mode 'turbo'"),
    (["--sf", "0"], "--sf must be > 0, got 0"),
    (["--sf", "-2"], "--sf must be > 0, got -2"),
    (["--repeat", "0"], "--repeat must be >= 1"),
    (["--warmups", "-1"], "--warmups must be >= 0"),
    (["--conf", "executor.memory=1g"], "--conf takes spark.KEY=VALUE"),
])
def test_bad_arguments_exit_2_with_a_message(args, message, tmp_path, capsys):
    assert cli.main(args + ["--out", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err


def test_unwritable_output_folder_is_refused(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert cli.main(["--out", str(blocker / "out")]) == 2
    assert "Cannot write to the output folder" in capsys.readouterr().err


def test_an_output_folder_of_the_users_is_refused_and_kept(tmp_path, capsys):
    out = tmp_path / "Documents"
    out.mkdir()
    (out / "report.md").write_text("my report")
    assert cli.main(["--sf", "0.01", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: --out {out} holds no .sparkrm-owner marker, so sparkrm cannot tell it wrote it: "
                   "sparkrm replaces a folder only when it holds a TPC-H results folder it wrote and nothing else. Choose a new or empty folder, or "
                   "move those files away.\n")
    assert (out / "report.md").read_text() == "my report"


def test_a_failed_run_leaves_no_earlier_results_behind(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    cli.prepare_out_dir(out)  # an earlier run's folder
    (out / "results.json").write_text('{"stale": true}')
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert cli.main(["--sf", "0.01", "--data", str(tmp_path / "data"), "--out", str(out)]) == 2
    assert "tpchgen-cli was not found" in capsys.readouterr().err
    assert not (out / "results.json").exists()


def test_an_unexpected_error_is_one_line_unless_debugging(tmp_path, monkeypatch, capsys):
    def broken(cfg, progress):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cli, "run", broken)
    args = ["--sf", "0.01", "--no-progress", "--out", str(tmp_path / "out")]
    assert cli.main(args) == 1
    err = capsys.readouterr().err
    assert err.strip() == ("error: the harness stopped unexpectedly: OSError: [Errno 28] No space left on device. "
                           "Run again with --debug for the traceback, and report it.")
    with pytest.raises(OSError, match="No space left"):
        cli.main(args + ["--debug"])


#: The module's two end-to-end runs of the harness, started together once their data exists (each test waits
#: for its own): both mostly wait on Spark, so the pair takes little longer than the 22 queries alone. The
#: rotary run asserts nothing across executors, so it runs on one: Q6 comes in 20 batches, 20 small Spark jobs
#: that a second executor only slowed, with the riffle run beside them (alone: 27 s on two, 21 s on one).
HARNESS_RUNS = {"riffle": ["--modes", "riffle"],
                "rotary": ["--modes", "rotary", "--queries", "2,6", "--executors", "1"]}


@pytest.fixture(scope="module")
def harness_runs(tmp_path_factory):
    data = tmp_path_factory.mktemp("tpch")
    ensure_dataset(data, 0.01, 4)  # the harness's default 4 parts, made before either run could race to make it
    started = {}
    for name, args in HARNESS_RUNS.items():
        folder = tmp_path_factory.mktemp(name)
        with open(folder / "stdout", "w") as stdout, open(folder / "stderr", "w") as stderr:
            started[name] = (subprocess.Popen([sys.executable, "-m", "benchmarks.tpch", "--sf", "0.01", *args,
                                               "--data", str(data), "--out", str(folder / "out"), "--no-progress"],
                                              stdout=stdout, stderr=stderr, cwd=PROJECT), folder)
    yield started
    for proc, _ in started.values():
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def finished(harness_runs, name):
    """The run ``name`` of :func:`harness_runs` once it ended: its exit status, stderr and output folder."""
    proc, folder = harness_runs[name]
    returncode = proc.wait(timeout=900)
    return returncode, (folder / "stderr").read_text(), folder / "out"


@pytest.mark.spark
@pytest.mark.integration
@pytest.mark.slow
def test_all_22_queries_match_duckdb_with_riffle_on_local_cluster(harness_runs):
    """Riffle merging every shuffle's files (and recording telemetry, the whole of mode ``vanilla``)
    gives DuckDB's answer to every query; one mode keeps this end-to-end run to one cluster."""
    returncode, stderr, out = finished(harness_runs, "riffle")
    assert returncode == 0, stderr[-4000:]
    data = json.loads((out / "results.json").read_text())
    assert data["schema_version"] == 1 and data["config"]["modes"] == ["riffle"]
    assert data["config"]["master"] == "local-cluster[2,1,2048]"
    assert sorted(int(q) for q in data["queries"]) == list(range(1, 23))
    for q, entry in data["queries"].items():
        riffle = entry["modes"]["riffle"]
        assert riffle["validated"] and riffle["rows"] >= 1 and riffle["metrics"]["tasks"] > 0
        assert entry["baseline"] == "riffle" and entry["ratio_to_baseline"]["riffle"] == 1.0
    q5 = data["queries"]["5"]["modes"]["riffle"]["metrics"]  # a six-way join: shuffles for sure
    assert q5["shuffle_write_bytes"] > 0 and q5["shuffle_read_bytes"] > 0 and q5["shuffle_read_requests"] > 0
    assert q5["riffle_reads"] <= q5["riffle_vanilla_reads"]
    assert set(data["summary"]) == {"riffle"} and data["summary"]["riffle"]["riffle_reads"] > 0
    report = (out / "report.md").read_text()
    assert len(re.findall(r"^\| Q\d+ \|", report, re.MULTILINE)) == 22 and "geomean ratio to riffle" in report
    assert (out / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_summary_compares_every_mode_with_the_baseline():
    def query(bare_s, riffle_s, reads):
        return {"modes": {"bare": {"wall_s": [bare_s], "median_s": bare_s, "harness_s": [0.0], "metrics": None},
                          "riffle": {"wall_s": [riffle_s], "median_s": riffle_s, "harness_s": [0.1 * riffle_s],
                                     "metrics": {"riffle_reads": reads, "riffle_vanilla_reads": 4 * reads}}},
                "baseline": "bare", "ratio_to_baseline": {"bare": 1.0, "riffle": riffle_s / bare_s}}

    results = {"config": {"modes": ["bare", "riffle"]}, "queries": {1: query(2.0, 1.0, 3), 2: query(1.0, 2.0, 5)}}
    summary = report.summarize(results)
    assert summary["bare"] == {"geomean_ratio": 1.0, "total_median_s": 3.0, "harness_overhead": 0.0}
    assert summary["riffle"]["geomean_ratio"] == pytest.approx(1.0)  # 0.5x and 2x
    assert summary["riffle"]["total_median_s"] == 3.0 and summary["riffle"]["harness_overhead"] == pytest.approx(0.1)
    assert (summary["riffle"]["riffle_reads"], summary["riffle"]["riffle_vanilla_reads"]) == (8, 32)


def test_by_default_vanilla_is_compared_with_every_feature_in_first_runs():
    cfg = cli.config_from(cli.build_parser().parse_args([]))
    assert cfg.modes == ["vanilla", "riffle", "rotary"] and (cfg.repeat, cfg.warmups) == (1, 0)
    assert cli.config_from(cli.build_parser().parse_args(["--repeat", "3"])).warmups == 1


def test_the_headline_says_what_each_feature_buys_with_an_interval():
    def query(vanilla_s, riffle_s, rotary_s, first_s, accurate_s):
        progressive = {"first_s": first_s, "accuracy95_s": accurate_s, "final_s": rotary_s}
        return {"baseline": "vanilla",
                "ratio_to_baseline": {"vanilla": 1.0, "riffle": riffle_s / vanilla_s, "rotary": rotary_s / vanilla_s},
                "modes": {"vanilla": {"median_s": vanilla_s, "wall_s": [vanilla_s], "harness_s": [0], "metrics": {}},
                          "riffle": {"median_s": riffle_s, "wall_s": [riffle_s], "harness_s": [0],
                                     "metrics": {"riffle_reads": 10, "riffle_vanilla_reads": 40}},
                          "rotary": {"median_s": rotary_s, "wall_s": [rotary_s], "harness_s": [0], "metrics": {},
                                     "progressive_median_s": progressive}}}

    results = {"config": {"modes": ["vanilla", "riffle", "rotary"], "sf": 1, "validate": True},
               "queries": {1: query(4.0, 2.0, 4.0, 0.4, 1.0), 2: query(2.0, 1.0, 2.0, 0.4, None),
                           3: query(1.0, 0.5, 1.0, 0.2, 0.5)}}
    riffle, reads, rotary, progressive = report.headline(results)[1:]
    assert riffle.split() == ["riffle", "time", "to", "the", "exact", "answer", "0.50x", "vanilla's", "(geomean",
                              "over", "queries;", "95%", "interval", "0.50-0.50)"]  # one ratio everywhere
    assert reads.strip() == "shuffle reads issued / Spark would: 30 / 120 (75% fewer)"
    assert "time to the exact answer 1.00x" in rotary
    assert progressive.strip() == ("3 queries answered progressively (medians): first estimate at 0.20x vanilla's "
                                   "time, 95% accurate at 0.38x (2 of them)")
    results["queries"][2]["ratio_to_baseline"]["riffle"] = 1.0
    assert re.search(r"0\.63x vanilla's \(geomean over queries; 95% interval 0\.\d\d-\d\.\d\d\)",
                     report.headline(results)[1])


@pytest.mark.spark
@pytest.mark.integration
def test_the_rotary_mode_answers_the_plain_queries_progressively_where_it_can_and_the_rest_exactly(harness_runs):
    returncode, stderr, out = finished(harness_runs, "rotary")
    assert returncode == 0, stderr[-4000:]
    data = json.loads((out / "results.json").read_text())
    q2, q6 = (data["queries"][q]["modes"]["rotary"] for q in ("2", "6"))
    assert q2["validated"] and q6["validated"]  # Q6's final progressive answer equals DuckDB's
    assert "progressive" not in q2  # Q2 has no aggregate: it runs exactly in one step
    times = q6["progressive_median_s"]
    assert 0 < times["first_s"] <= times["accuracy95_s"] <= times["final_s"] <= q6["median_s"]
    assert all(0 < run["quarter_accuracy"] <= 1 for run in q6["progressive"])  # after 5 of 20 batches
    assert "## Progressive answers (rotary)" in (out / "report.md").read_text()
