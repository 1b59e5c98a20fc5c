"""Rotary-DLT's pure parts: the threshold rule and baselines, progress (Algorithm 6), the estimators, history."""

import json

import numpy as np
import pytest

from spark_plugin.shared import criteria as crit
from tf_packing.dlt import (DltView, History, HistoryError, JobRecord, MemoryEstimator, choose, epoch_seconds,
                            epochs_to_reach, order, progress)


def view(job, progress_, *, arrival=0.0, deadline=None, epochs=0, memory=1.0, remaining=None):
    return DltView(job, arrival, deadline, progress_, epochs, memory, remaining)


def test_rotary_dlt_serves_the_lowest_progress_until_every_job_reaches_the_threshold_then_the_highest():
    views = [view("a", 0.7, arrival=0), view("b", 0.2, arrival=1), view("c", 0.9, arrival=2)]
    assert [v.job_id for v in order("rotary-dlt", views, threshold=0.5)] == ["b", "a", "c"]
    raised = [view("a", 0.7), view("b", 0.6, arrival=1), view("c", 0.9, arrival=2)]
    assert [v.job_id for v in order("rotary-dlt", raised, threshold=0.5)] == ["c", "a", "b"]
    assert [v.job_id for v in order("rotary-dlt", raised, threshold=1.0)] == ["b", "a", "c"]  # all fairness


def test_rotary_dlt_does_not_wait_for_jobs_predicted_to_miss_and_serves_them_last():
    from tf_packing.dlt.policies import DltView as V

    views = [V("hopeless", 0, 20.0, 0.05, 9, 1.0, 50.0, reachable=False), view("a", 0.7, arrival=1),
             view("b", 0.6, arrival=2)]
    assert [v.job_id for v in order("rotary-dlt", views, threshold=0.5)] == ["a", "b", "hopeless"]
    assert [v.job_id for v in order("rotary-dlt", views, threshold=0.65)] == ["b", "a", "hopeless"]


def test_a_job_is_reachable_while_its_predicted_epochs_fit_its_budget():
    from tf_packing.dlt.progress import reachable

    acc = crit.parse("UNTIL ACC >= 0.9 WITHIN 20 SECONDS")
    assert reachable(acc, 3, 10.0, 4, 2.0) and not reachable(acc, 3, 10.0, 6, 2.0)
    assert reachable(acc, 3, 10.0, None, 2.0)  # nothing tells: not given up
    assert not reachable(crit.parse("UNTIL ACC >= 0.9 WITHIN 5 EPOCHS"), 3, 0.0, 3, None)
    assert not reachable(crit.parse("UNTIL ACC >= 0.9"), 3, 0.0, 200, 1.0)


def test_the_deadline_variant_serves_reachable_jobs_by_deadline_and_those_predicted_to_miss_last():
    from tf_packing.dlt.policies import DltView as V

    views = [V("hopeless", 0, 5.0, 0.1, 3, 1.0, reachable=False), V("later", 1, 30.0, 0.2, 1, 1.0),
             V("sooner", 2, 10.0, 0.9, 4, 1.0), V("no-deadline", 3, None, 0.5, 2, 1.0)]
    assert [v.job_id for v in order("rotary-dlt-deadline", views)] == ["sooner", "later", "no-deadline", "hopeless"]


def test_the_baselines_order_by_arrival_deadline_remaining_time_and_epochs_trained():
    views = [view("a", 0, arrival=0, deadline=None, epochs=3, remaining=5.0),
             view("b", 0, arrival=1, deadline=30.0, epochs=1, remaining=None),
             view("c", 0, arrival=2, deadline=10.0, epochs=2, remaining=2.0)]
    assert [v.job_id for v in order("fifo", views)] == ["a", "b", "c"]
    assert [v.job_id for v in order("edf", views)] == ["c", "b", "a"]
    assert [v.job_id for v in order("srtf", views)] == ["b", "c", "a"]  # unknown first, to learn it
    assert [v.job_id for v in order("fair", views)] == ["b", "c", "a"]
    with pytest.raises(ValueError, match="choose from rotary-dlt, rotary-dlt-deadline, fifo, edf, srtf, fair, srf"):
        order("lottery", views)


def test_the_thesis_baselines_serve_one_family_of_criteria_first_and_the_others_round_robin():
    from tf_packing.dlt.policies import DltView as V

    def job(name, criterion, epochs, arrival):
        return V(name, arrival, None, 0.0, epochs, 1.0, criterion=crit.parse(criterion))

    views = [job("run-10", "RUN FOR 10 EPOCHS", 4, 0), job("acc-95", "UNTIL ACC >= 0.95 WITHIN 20 EPOCHS", 1, 1),
             job("conv-small", "UNTIL CONVERGE(ACC, 0.001) WITHIN 20 EPOCHS", 0, 2),
             job("run-3", "RUN FOR 3 EPOCHS", 2, 3), job("acc-90", "UNTIL ACC >= 0.9 WITHIN 20 EPOCHS", 3, 4),
             job("conv-big", "UNTIL CONVERGE(ACC, 0.05) WITHIN 20 EPOCHS", 5, 5)]
    names = lambda policy: [v.job_id for v in order(policy, views)]  # noqa: E731
    assert names("srf") == ["run-3", "run-10", "conv-small", "acc-95", "acc-90", "conv-big"]
    assert names("bcf") == ["conv-big", "conv-small", "acc-95", "run-3", "acc-90", "run-10"]
    assert names("laf") == ["acc-90", "acc-95", "conv-small", "run-3", "run-10", "conv-big"]


def test_choose_takes_jobs_in_order_while_memory_holds_them_up_to_the_pack_size():
    ordered = [view("a", 0, memory=6), view("big", 0, memory=9), view("c", 0, memory=3), view("d", 0, memory=1)]
    assert choose(ordered, 10) == ["a"]
    assert choose(ordered, 10, max_pack=4) == ["a", "c", "d"]
    assert choose(ordered, 10, max_pack=2) == ["a", "c"]
    assert choose(ordered, 5, max_pack=4) == ["c", "d"]


def test_progress_of_each_criterion():
    from tf_packing.dlt.progress import epochs_needed

    def progress_of(criterion, epochs, elapsed_s, accuracies, epoch_s, past):
        return progress(criterion, epochs, elapsed_s, epochs_needed(criterion, accuracies, past), epoch_s)

    past = [JobRecord("mlp", 32, 1e6, [0.5, 0.8, 0.9, 0.95], [1.0] * 4)] * 3
    assert progress_of(crit.parse("RUN FOR 10 EPOCHS"), 4, 99.0, [], None, []) == pytest.approx(0.4)
    assert progress_of(crit.parse("RUN FOR 20 SECONDS"), 1, 5.0, [], None, []) == pytest.approx(0.25)
    # past jobs reached 0.9 at their third epoch: one epoch run of three needed
    assert progress_of(crit.parse("UNTIL ACC >= 0.9"), 1, 1.0, [0.5], 1.0, past) == pytest.approx(1 / 3)
    # nothing to tell from: the epochs run over the most it may run (60 s at 2 s an epoch)
    assert progress_of(crit.parse("UNTIL ACC >= 0.9 WITHIN 60 SECONDS"), 3, 6.0, [0.1, 0.2, 0.2], 2.0, []) \
        == pytest.approx(0.1, abs=0.1)
    assert progress_of(crit.parse("UNTIL ACC >= 0.9"), 2, 1.0, [0.5, 0.92], 1.0, []) == 1.0


def test_a_runtime_job_in_epochs_needs_the_rest_of_its_budget():
    from tf_packing.dlt.progress import epochs_needed

    assert epochs_needed(crit.parse("RUN FOR 10 EPOCHS"), [0.5] * 4, []) == 6
    assert epochs_needed(crit.parse("RUN FOR 10 SECONDS"), [0.5] * 4, []) is None


def test_the_live_curve_tells_how_many_epochs_are_left():
    k = np.arange(1, 5)
    live = list(0.95 - 0.5 * np.exp(-0.4 * k))  # reaches 0.9 at epoch 5.8: two more
    assert epochs_to_reach(live, 0.9, []) == pytest.approx(2, abs=1)
    assert epochs_to_reach(live, 0.99, []) == 200  # beyond the plateau: out of reach for now
    assert epochs_to_reach([0.1], 0.9, []) is None


def test_memory_follows_past_jobs_batch_size_line_padded_and_epoch_time_falls_back_to_history():
    past = [JobRecord("cnn", 32, 1000.0), JobRecord("cnn", 64, 1800.0)]
    assert MemoryEstimator(margin=0.2).estimate(128, past, static_bytes=1.0) == pytest.approx(3400 * 1.2)
    assert MemoryEstimator(margin=0.0).estimate(16, past[:1], static_bytes=1.0) == pytest.approx(500)
    assert MemoryEstimator(margin=0.5).estimate(16, [], static_bytes=100.0) == pytest.approx(150)
    assert epoch_seconds([2.0, 4.0], past) == 3.0
    assert epoch_seconds([], [JobRecord("cnn", 32, 1.0, [0.5], [5.0])]) == 5.0
    assert epoch_seconds([], []) is None


def test_history_round_trips_its_file_and_refuses_a_bad_line_naming_it(tmp_path):
    path = tmp_path / "history.jsonl"
    History(path).add(JobRecord("mlp", 32, 5e5, [0.4, 0.6], [0.2, 0.1]))
    assert History(path).similar("mlp") == [JobRecord("mlp", 32, 5e5, [0.4, 0.6], [0.2, 0.1])]
    with path.open("a") as f:
        f.write(json.dumps({"kind": "mlp"}) + "\n")
    with pytest.raises(HistoryError, match=r"history.jsonl:2 is not a Rotary-DLT job record .*remove the line"):
        History(path)
