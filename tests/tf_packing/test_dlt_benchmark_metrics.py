"""The Rotary-DLT benchmark's measures, from results written as the arbiter writes them, and its options (no
TensorFlow)."""

import re
from pathlib import Path

import pytest

from benchmarks.dlt import metrics
from benchmarks.dlt.__main__ import main, summarize
from benchmarks.dlt.workload import jobs


def result(criterion, status, arrival, accuracies, ends):
    return {"criterion": criterion, "status": status, "arrival_s": arrival, "accuracies": accuracies,
            "epoch_end_s": ends, "finished_s": ends[-1] if ends else arrival}


ACC = result("UNTIL ACC >= 0.9 WITHIN 10 EPOCHS", "attained", 0.0, [0.6, 0.8, 0.93], [1.0, 2.0, 3.0])
CONV = result("UNTIL CONVERGE(ACC, 0.01) WITHIN 8 EPOCHS", "attained", 1.0, [0.5, 0.7, 0.705, 0.71], [4, 5, 6, 7])
MISSED = result("UNTIL CONVERGE(ACC, 0.001) WITHIN 4 EPOCHS", "unattained", 2.0, [0.5, 0.6, 0.7, 0.8], [8, 9, 10, 11])
RUN = result("RUN FOR 5 EPOCHS", "attained", 6.0, [0.9] * 5, [12, 13, 14, 15, 16])


def test_attainment_progress_is_the_thesis_measure_of_each_family():
    assert metrics.attainment_progress(ACC, 0) == 0.0
    assert metrics.attainment_progress(ACC, 2) == pytest.approx(0.8 / 0.9)
    assert metrics.attainment_progress(ACC, 3) == 1.0
    assert metrics.attainment_progress(CONV, 2) == pytest.approx(2 / 4)  # converged at its fourth epoch
    assert metrics.attainment_progress(MISSED, 2) == pytest.approx(2 / 4)  # never did: its most epochs
    assert metrics.attainment_progress(RUN, 2) == pytest.approx(2 / 5)
    with pytest.raises(ValueError, match="RUN FOR 30 SECONDS: .* give runtime criteria in EPOCHS"):
        metrics.attainment_progress(dict(RUN, criterion="RUN FOR 30 SECONDS"), 2)


def test_attained_by_a_time_and_the_worst_progress_over_time():
    results = [ACC, CONV, MISSED, RUN]
    assert [metrics.attained_by(results, t) for t in (2.9, 3.0, 7.0, 16.0)] == [0, 1, 2, 3]
    assert metrics.progress_at(RUN, 5.9) is None and metrics.progress_at(RUN, 13.5) == pytest.approx(2 / 5)
    # t=0: only ACC, at 0; t=3: ACC done (1), CONV and MISSED arrived with no epoch (0)
    assert metrics.worst_progress(results, [0.0, 3.0]) == 0.0
    assert metrics.worst_progress([ACC], [1.0, 2.0]) == pytest.approx((0.6 + 0.8) / 0.9 / 2)
    assert metrics.time_to_attain(results) == pytest.approx((3 + 6 + 10) / 3)
    assert metrics.makespan(results) == 16


def test_summary_times_every_arm_of_a_seed_by_fifo_and_pairs_rotary_arms_on_the_headline():
    slow = [dict(r, finished_s=r["finished_s"] * 2, epoch_end_s=[e * 2 for e in r["epoch_end_s"]])
            for r in (ACC, CONV, MISSED, RUN)]
    runs = [{"seed": 0, "arm": "fifo", "wall_s": 16, "jobs": [ACC, CONV, MISSED, RUN]},
            {"seed": 0, "arm": "rotary-dlt", "wall_s": 32, "jobs": slow}]
    summary, paired = summarize(runs, ["fifo", "rotary-dlt"], [0], "attained_by_0.5")
    assert summary["fifo"]["attained_by_0.5"]["per_seed"] == [2]  # by 8 s: ACC and CONV
    assert summary["rotary-dlt"]["attained_by_0.5"]["per_seed"] == [1]  # twice as slow: ACC at 6 s
    assert summary["rotary-dlt"]["attained"]["per_seed"] == [3]
    assert list(paired) == ["rotary-dlt - fifo"] and paired["rotary-dlt - fifo"]["attained_by_0.5"]["per_seed"] == [-1]
    assert paired["rotary-dlt - fifo"]["worst_progress"]["per_seed"] == [pytest.approx(
        summary["rotary-dlt"]["worst_progress"]["mean"] - summary["fifo"]["worst_progress"]["mean"])]


def test_each_pair_of_rotary_arms_is_compared_once():
    runs = [{"seed": 0, "arm": arm, "wall_s": 1, "jobs": [ACC]} for arm in ("fifo", "rotary-dlt", "rotary-dlt+pack")]
    _, paired = summarize(runs, ["fifo", "rotary-dlt", "rotary-dlt+pack"], [0], "attained")
    assert list(paired) == ["rotary-dlt - fifo", "rotary-dlt - rotary-dlt+pack", "rotary-dlt+pack - fifo"]


def test_without_a_fifo_arm_every_arm_is_timed_by_the_fastest():
    runs = {"edf": {"wall_s": 9, "jobs": [RUN]}, "srtf": {"wall_s": 5, "jobs": [ACC]}}
    assert metrics.reference_time(runs) == 3.0  # srtf's, whose last job finished at 3 s (edf's at 16 s)
    assert metrics.reference_time(dict(runs, fifo={"wall_s": 20, "jobs": [CONV]})) == 7


def test_the_thesis_mix_bounds_every_criterion_in_epochs_and_the_deadline_mix_is_unchanged():
    thesis = jobs(0, 200, mean_gap_s=1.0, deadline_scale=1.0, mix="thesis")
    assert not any("SECONDS" in j["criterion"] for j in thesis)
    share = sum("CONVERGE" in j["criterion"] for j in thesis) / len(thesis)
    assert 0.5 < share < 0.7  # Table 3.2: 60% convergence
    assert jobs(1, 5, mean_gap_s=1.0, deadline_scale=1.0) == jobs(1, 5, mean_gap_s=1.0, deadline_scale=1.0,
                                                                  mix="deadlines")


@pytest.mark.parametrize("args, message", [
    (["--seeds", "a,b"], r"--seeds must be a whole number in \[0, 4294967295\]\. Got 'a'\. Pass "
                         r"comma-separated seeds, e\.g\. 0,1,2\."),
    (["--seeds", "1,1"], r"--seeds '1,1' gives a seed twice"),
    (["--max-pack", "0"], r"--max-pack must be a whole number in \[1, 64\]\. Got 0\."),
    (["--threshold", "2"], r"--threshold must be a finite number >= 0 and <= 1\. Got 2\.0\."),
    (["--jobs", "0"], r"--jobs must be a whole number in \[1, 1000\]\. Got 0\."),
    (["--memory-mb", "nan"], r"--memory-mb must be a finite number > 0\. Got nan\."),
    (["--out", "README.md"], r"--out README\.md is a file: pass the folder the results go to"),
])
def test_a_bad_option_is_one_line_and_exit_status_2_before_any_training(args, message, capsys, monkeypatch):
    monkeypatch.chdir(Path(__file__).parents[2])  # where README.md is a file
    with pytest.raises(SystemExit) as exited:
        main(args)
    out, err = capsys.readouterr()
    assert exited.value.code == 2 and out == "" and len(err.splitlines()) == 1
    assert re.match(rf"error: {message}.* \(see python -m benchmarks\.dlt --help\)$", err.strip())
