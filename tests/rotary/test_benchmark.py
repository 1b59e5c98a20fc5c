"""``python -m benchmarks.rotary`` end to end at toy scale: reports are written and consistent.

One smoke run per command, at the smallest scale that still shows what its report says. The workload's two
seeds (2235 and 2430) each draw two Q6 jobs, the second arriving within half a second: seeds 0 and 1 drew four
queries, Q21 and Q8 among them (each warmed up and run alone before the policies), and a second job arriving
5.4 s in, which each policy's run of seed 0 waited for. Two policies, a policy and its second run under a label,
show each part of the report (a row per policy, a pair compared seed by seed, the order reversed on the second
seed); a third policy (max-min against max-sum) and rotary, a fourth, only ran the same loop more times
(test_arbiter.py runs the policies through the arbiter): which pairs the report compares, and how, is checked
on made-up summaries below, without Spark.
"""

import json
import shutil
import subprocess
import sys

import pytest

from benchmarks.tpch.data import ensure_dataset

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """One TPC-H root for the module, generated here before any run could race to make it; each run's
    batch layout (3 batches here, 4 for suspend) is made by its first run beside it."""
    root = tmp_path_factory.mktemp("tpch")
    ensure_dataset(root, 0.01, 2)
    return root


@pytest.fixture(scope="module")
def suspend_run(data, tmp_path_factory):
    """The suspend benchmark, started with the module's first test and run beside the others: its own
    application and batch layout, and like them it mostly waits on Spark. ``test_suspend_report`` waits for it.
    In local mode, as time-to-accuracy: a suspension stops, writes and resumes one query in the driver, and
    nothing in it depends on executors (a local-cluster's worker and executor JVMs cost 5 CPU-seconds more)."""
    out = tmp_path_factory.mktemp("suspend")
    with open(out / "stderr", "w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "benchmarks.rotary", "suspend", "--sfs", "0.01", "--queries",
                                 "6", "--batches", "4", "--parts", "2", "--master", "local[1]", "--data", str(data),
                                 "--out", str(out)], stdout=subprocess.DEVNULL, stderr=stderr)
    yield proc, out
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_time_to_accuracy_and_workload_reports(tmp_path, data, suspend_run):
    common = ["--sf", "0.01", "--parts", "2", "--batches", "3", "--executors", "1", "--out", str(tmp_path)]
    # time-to-accuracy runs beside the workload, on its own copy of the data (so its own batch layout), in
    # local mode: it times one query alone, exact and progressive, and nothing in it depends on executors
    dataset = ensure_dataset(data, 0.01, 2)
    shutil.copytree(dataset, tmp_path / "tpch" / dataset.name)
    with open(tmp_path / "tta.stderr", "w") as stderr:
        tta = subprocess.Popen([sys.executable, "-m", "benchmarks.rotary", "time-to-accuracy", "--queries", "6",
                                "--repeat", "1", *common, "--master", "local[1]", "--data", str(tmp_path / "tpch")],
                               stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        run = subprocess.run([sys.executable, "-m", "benchmarks.rotary", "workload", "--jobs", "2",
                              "--seeds", "2235,2430", "--policies", "utility-min,utility-min@again",
                              "--time-scale", "0.01", "--epoch", "0.3", "--memory-mb", "100", *common,
                              "--data", str(data)], capture_output=True, text=True, timeout=900)
    finally:
        tta_returncode = tta.wait(timeout=900)
    assert tta_returncode == 0, (tmp_path / "tta.stderr").read_text()[-3000:]
    [result] = tmp_path.glob("*.time-to-accuracy.json")
    queries = json.loads(result.read_text())["queries"]
    assert set(queries) == {"6"}
    assert all(q["points"][-1]["true_accuracy"] == 1.0 and q["exact_s"] > 0 for q in queries.values())
    assert result.with_suffix(".md").is_file() and result.with_suffix(".png").is_file()

    assert run.returncode == 0, run.stderr[-3000:]
    [result] = tmp_path.glob("*.workload-*-100mb.json")
    runs = json.loads(result.read_text())["runs"]
    assert list(runs) == ["2235", "2430"]
    assert all(list(by_policy) == ["utility-min", "utility-min@again"] for by_policy in runs.values())
    assert [runs[seed]["utility-min"]["position"] for seed in runs] == [0, 1]  # the order alternates
    assert all(len(r["records"]) == 2 and r["wall_s"] > 0 and r["peak_memory_bytes"] <= 100e6
               and r["epochs_over_grant"] == [] for by_policy in runs.values() for r in by_policy.values())
    report = result.with_suffix(".md").read_text()
    assert "| utility-min |" in report and "| utility-min@again |" in report and "memory budget 100 MB" in report
    assert "A/A (`utility-min@again` minus `utility-min`, the same policy run again)" in report
    assert "| jobs attained |" in report


def test_unknown_policy_is_refused(tmp_path, capsys):
    """The command line's own check (argparse's exit status 2 before Spark starts), called in this process:
    the runs above prove the ``python -m`` entry point, two more interpreters would only import it again."""
    from benchmarks.rotary.run import main

    for policies, message in (("fifo", "unknown --policies ['fifo']"),
                              ("edf,edf", "run it again under a label instead, e.g. edf,edf@again")):
        with pytest.raises(SystemExit) as exit_status:
            main(["workload", "--policies", policies, "--out", str(tmp_path)])
        assert exit_status.value.code == 2 and message in capsys.readouterr().err


def test_the_report_pairs_max_min_with_max_sum_and_a_policy_with_its_second_run():
    from benchmarks.rotary.report import _pairs

    pairs = _pairs(["utility-sum", "utility-min", "edf", "edf@again", "utility-min-progress", "rotary@again"])
    assert [(a, b) for a, b, _ in pairs] == [("utility-min", "utility-sum"), ("edf@again", "edf")]


def test_the_report_compares_each_pair_seed_by_seed():
    """What the workload report shows per pair: the first's figures minus the second's, per seed and their mean
    (made-up summaries of two seeds: the smoke run above compares one pair, these are both kinds)."""
    from benchmarks.rotary.report import WORST, _paired_comparisons

    def summary(attained, worst):
        return {"attained": attained, "worst_progress": worst, f"worst{WORST}_progress": worst,
                f"worst{WORST}_batches": worst, "never_ran": 0}

    per_seed = {"utility-sum": [summary(3, 0.5), summary(2, 0.25)],
                "utility-min": [summary(2, 1.0), summary(2, 0.75)],
                "utility-min@again": [summary(2, 1.0), summary(1, 0.5)]}
    text = "\n".join(_paired_comparisons(per_seed))
    assert text.count("per seed and mean [95% interval]") == 2
    assert "Max-min minus max-sum (`utility-min` minus `utility-sum`, the same utilities)" in text
    assert "A/A (`utility-min@again` minus `utility-min`, the same policy run again)" in text
    max_min, again = text.split("A/A")
    assert "| jobs attained | -1.0 +0.0 | -0.5 [-6.9, 5.9] |" in max_min
    assert "| worst job's progress | +0.50 +0.50 | 0.50 [0.50, 0.50] |" in max_min
    assert "| jobs attained | +0.0 -1.0 | -0.5 [-6.9, 5.9] |" in again and "| worst job's progress | +0.00 -0.25 |" in again


def test_suspend_report(suspend_run):
    proc, out = suspend_run
    assert proc.wait(timeout=900) == 0, (out / "stderr").read_text()[-3000:]
    [result] = out.glob("*.suspend.json")
    [q6] = json.loads(result.read_text())["runs"].values()
    assert q6["half_state"]["groups"] == 1 and q6["total_s"] > 0
    assert all(q6[how]["same_answer"] for how in ("requested", "cancelled", "cost_model"))
    assert "| Q6 | 0.01 |" in result.with_suffix(".md").read_text()
