"""``python -m benchmarks.riffle``: a tiny synthetic sweep end to end, and its input checks.

The numbers it records are judged in benchmarks/results; here only that the run is real and
consistent: merging cuts the reads per reducer exactly as the request model predicts. Each command runs once,
its application on one executor: what they measure does not depend on how many (a host's executors merge
together), and each further executor JVM cost seconds. The synthetic sweep runs in local mode (``--master``: no
worker or executor JVM; the disk benchmarks, which cap their executors' reads, keep their local-cluster), and
the whole job one round: how rounds pair into ratios and intervals is checked on made-up runs below, without Spark.
"""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.spark


def _riffle_bench(*args):
    return subprocess.run([sys.executable, "-m", "benchmarks.riffle", *args],
                          capture_output=True, text=True, timeout=600)


def test_synthetic_sweep_writes_reports_whose_reads_match_the_model(tmp_path):
    run = _riffle_bench("synthetic", "--maps", "8", "--reducers", "4", "--block-kb", "8", "--master", "local[1]",
                        "--fan-ins", "4", "--block-targets", "32", "--repeat", "1", "--out", str(tmp_path))
    assert run.returncode == 0, run.stderr[-3000:]
    [result] = tmp_path.glob("*.synthetic.json")
    assert result.with_suffix(".md").is_file() and result.with_suffix(".png").stat().st_size > 0
    summary = json.loads(result.read_text())["summary"]
    assert set(summary) == {"off", "N=4", "N=4 best-effort", "B=32K"}
    assert summary["off"]["reads_per_reducer"] == 8 and summary["off"]["merged_fraction"] == 0
    for config in ("N=4", "N=4 best-effort", "B=32K"):  # the block-size policy: about 4 blocks of 8 KiB
        s = summary[config]
        assert s["reads_per_reducer"] < 8
        assert s["reads_per_reducer"] == pytest.approx(s["predicted_reads_per_reducer"], rel=0.1)
        assert s["avg_read_bytes"] > summary["off"]["avg_read_bytes"]


def test_driver_scale_pushes_the_same_merges_with_a_fraction_of_polling_requests(tmp_path):
    run = _riffle_bench("driver-scale", "--executors", "20", "--executors-per-host", "5", "--maps", "400",
                        "--maps-per-s", "2000", "--reducers", "100", "--merge-ms", "10", "--repeat", "1",
                        "--out", str(tmp_path))
    assert run.returncode == 0, run.stderr[-3000:]
    [result] = tmp_path.glob("*.driver-scale.json")
    assert result.with_suffix(".md").is_file()
    runs = {r["mode"]: r for r in json.loads(result.read_text())["runs"]}
    push, poll = runs["push"], runs["poll"]
    assert push["merges"] == poll["merges"] > 20  # the same groups, each delivered once
    assert set(push["requests"]) <= {"register", "done"} and push["pushes"] > 0
    assert poll["requests"]["poll"] > 10 * push["pushes"]  # 20 executors x 100 polls a second
    # What the driver handled during the map phase (requests and pushes), counted, not timed: the rates the
    # report shows divide these by each mode's map phase.
    handled = {mode: sum(r["requests"].values()) + r["pushes"] for mode, r in runs.items()}
    assert handled["push"] < handled["poll"] / 5
    assert push["delay_ms"] and poll["delay_ms"]  # each mode timed its deliveries


def test_the_old_schedulers_classes_are_kept_whole_once_and_used_where_the_cache_cannot_be_written(tmp_path):
    """The cache of :func:`benchmarks.riffle.driver_scale.poll_scheduler`: a copy appears whole or not at all, a
    copy already there is kept, and an unwritable cache leaves the run its own classes."""
    from benchmarks.riffle.driver_scale import _kept

    classes = tmp_path / "compiled"
    (classes / "dev").mkdir(parents=True)
    (classes / "dev" / "A.class").write_bytes(b"new")
    cached = tmp_path / "cache" / "b65d6d7-pyspark-4"
    assert _kept(classes, cached) == cached and (cached / "dev" / "A.class").read_bytes() == b"new"
    (classes / "dev" / "A.class").write_bytes(b"newer")
    assert _kept(classes, cached) == cached and (cached / "dev" / "A.class").read_bytes() == b"new"
    assert [p.name for p in cached.parent.iterdir()] == [cached.name]  # no staging copy left behind
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    assert _kept(classes, blocked / "cache" / "x") == classes


def test_whole_job_runs_both_modes_under_the_cap_or_says_why_not(tmp_path):
    run = _riffle_bench("whole-job", "--maps", "8", "--reducers", "4", "--block-kb", "8", "--executors", "1",
                        "--iops", "2000", "--drop-interval-ms", "100", "--policies", "fanin,blocksize",
                        "--target-block-kb", "16", "--repeat", "1", "--out", str(tmp_path))
    assert run.returncode == 0, run.stderr[-3000:]
    if "whole-job benchmark skipped:" in run.stderr:  # not root, or no blkio: nothing written
        assert not any(tmp_path.iterdir())
        return
    [result] = tmp_path.glob("*.whole-job.json")
    data = json.loads(result.read_text())
    modes = ["riffle", "riffle-blocksize", "vanilla"]
    assert sorted((r["mode"], r["round"]) for r in data["runs"]) == [(m, 0) for m in modes]
    assert data["meta"]["conf"]["modes"] == ["vanilla", "riffle", "riffle-blocksize"]
    summary = data["summary"]
    # 8 maps of about 7 KiB blocks: N = 10 merges all 8 at once, a 16 KiB target about three at a time.
    assert summary["vanilla"]["reads_per_reducer"] == 8 and summary["riffle"]["reads_per_reducer"] == 1
    assert 1 < summary["riffle-blocksize"]["reads_per_reducer"] < 8
    assert summary["riffle"]["model_error"] == summary["riffle-blocksize"]["model_error"] == 0
    runs = {r["mode"]: r for r in data["runs"]}
    for mode in ("riffle", "riffle-blocksize"):  # one round: its ratio, no interval (two rounds: see below)
        job = summary["ratios"][mode]["job_s"]
        assert job["geomean"] == pytest.approx(runs[mode]["job_s"] / runs["vanilla"]["job_s"])
        assert job["low"] is None and job["high"] is None
    assert "whole job over vanilla" in result.with_suffix(".md").read_text()


def _whole_job_run(mode, rnd, job_s, reduce_s):
    figures = dict.fromkeys(("map_stage_s", "merge_tail_s", "wall_s", "reads_per_reducer",
                             "predicted_reads_per_reducer", "model_error", "avg_read_bytes", "disk_reads",
                             "disk_read_bytes"), 1.0)
    return {"mode": mode, "round": rnd, "job_s": job_s, "reduce_stage_s": reduce_s, **figures}


def test_whole_job_ratios_pair_each_round_with_its_own_vanilla_run_and_the_report_shows_their_interval(tmp_path):
    """The whole job's summary and report over several rounds, from made-up runs (the smoke run above has one)."""
    from benchmarks.riffle.report import write_whole_job_report
    from benchmarks.riffle.whole_job import summarize

    order = ["vanilla", "riffle"]
    # round 0: riffle at half vanilla's time; round 1: at a quarter (vanilla slower that round)
    runs = [_whole_job_run("riffle", 0, 2.0, 1.0), _whole_job_run("vanilla", 0, 4.0, 2.0),
            _whole_job_run("vanilla", 1, 8.0, 2.0), _whole_job_run("riffle", 1, 2.0, 1.0)]
    summary = summarize(runs, order)
    assert summary["vanilla"]["job_s"] == 6.0 and summary["riffle"]["job_s"] == 2.0  # medians per mode
    job = summary["ratios"]["riffle"]["job_s"]
    assert job["geomean"] == pytest.approx((0.5 * 0.25) ** 0.5)  # per-round ratios, not a ratio of medians
    assert job["low"] < job["geomean"] < job["high"]
    assert summary["ratios"]["riffle"]["reduce_stage_s"]["geomean"] == pytest.approx(0.5)
    assert "riffle" not in summary["ratios"]["riffle"] and "vanilla" not in summary["ratios"]

    conf = {"maps": 8, "reducers": 4, "block_kb": 8, "executors": 1, "fan_in": 10, "policies": ["fanin"],
            "target_block_kb": 16, "modes": order, "iops": 2000, "io_unit_kb": 512, "drop_interval_ms": 100,
            "device": "8:0", "repeat": 2}
    meta = {"date": "2026-01-01T00:00:00+00:00", "git_sha": "test", "pyspark": "x", "java": "x",
            "machine": {"cpus": 2}, "conf": conf}
    path = tmp_path / "run.whole-job.json"
    path.write_text(json.dumps({"meta": meta, "runs": runs, "summary": summary}))
    report = write_whole_job_report(path).read_text()
    assert f"whole job over vanilla's **{job['geomean']:.2f}x** (95% interval {job['low']:.2f}-{job['high']:.2f})" \
        in report and "2 rounds after a warm-up" in report


def test_skew_join_splits_read_fewer_blocks_with_partial_merges_or_says_why_not(tmp_path):
    run = _riffle_bench("skew-join", "--maps", "24", "--rows", "60000", "--reducers", "8", "--advisory-kb", "1200",
                        "--executors", "1", "--fan-in", "4", "--iops", "2000", "--drop-interval-ms", "100",
                        "--repeat", "1", "--out", str(tmp_path))
    assert run.returncode == 0, run.stderr[-3000:]
    if "skew-join benchmark skipped:" in run.stderr:  # not root, or no blkio: nothing written
        assert not any(tmp_path.iterdir())
        return
    [result] = tmp_path.glob("*.skew-join.json")
    summary = json.loads(result.read_text())["summary"]
    vanilla, partly, whole_only = (summary[m] for m in ("vanilla", "riffle", "riffle-whole-only"))
    assert vanilla["range_tasks"] > 0 and vanilla["range_reads"] == vanilla["range_vanilla_reads"]
    assert partly["groups_partial"] > 0 and whole_only["groups_partial"] == 0
    assert partly["range_reads"] < whole_only["range_reads"] <= vanilla["range_reads"]
    assert "time / vanilla" in result.with_suffix(".md").read_text()


@pytest.mark.parametrize("args", [["synthetic", "--maps", "0"], ["slow-disk", "--block-kb", "-1"],
                                  ["synthetic", "--scopes", "rack"], ["nonsense"]])
def test_bad_arguments_exit_with_status_2_and_say_why(tmp_path, capsys, args):
    """The command line's own checks (argparse's exit status 2 before Spark starts), called in this process: the
    runs above prove the ``python -m`` entry point, more interpreters would only import it again."""
    from benchmarks.riffle.run import main

    with pytest.raises(SystemExit) as exit_status:
        main([*args, "--out", str(tmp_path)])
    assert exit_status.value.code == 2
    assert "error" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
