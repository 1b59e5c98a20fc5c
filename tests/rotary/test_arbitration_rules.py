"""Completion criteria, estimators and arbitration policies (pure Python, no Spark)."""

import random

import pytest

from spark_plugin.rotary import criteria, policies
from spark_plugin.rotary.criteria import ATTAINED, RUNNING, UNATTAINED, Progress
from spark_plugin.rotary.estimators import History, PastRun, ProgressEstimator, regression_weights
from spark_plugin.rotary.policies import JobView

# -- criteria ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text, kind, shown", [
    ("UNTIL ACC >= 0.95 WITHIN 3600 SECONDS", "accuracy", "UNTIL ACC >= 0.95 WITHIN 3600 SECONDS"),
    ("until  acc>=0.9", "accuracy", "UNTIL ACC >= 0.9"),
    ("UNTIL CONVERGE(ACC, 0.001) WITHIN 30 EPOCHS", "convergence", "UNTIL CONVERGE(ACC, 0.001) WITHIN 30 EPOCHS"),
    ("RUN FOR 120 SECONDS", "runtime", "RUN FOR 120 SECONDS"),
])
def test_the_three_templates_parse_and_print_back(text, kind, shown):
    c = criteria.parse(text)
    assert c.kind == kind and str(c) == shown


@pytest.mark.parametrize("text, message", [
    ("UNTIL ACC > 0.9", "not a completion criterion"),
    ("UNTIL ACC >= 1.5", r"threshold lies in \(0, 1\]"),
    ("UNTIL CONVERGE(ACC, 2)", r"delta lies in \(0, 1\)"),
    ("RUN FOR 0 SECONDS", "a budget is positive"),
])
def test_bad_criteria_say_what_is_accepted(text, message):
    with pytest.raises(ValueError, match=message):
        criteria.parse(text)


def test_accuracy_is_attained_at_the_threshold_and_unattained_at_the_deadline():
    c = criteria.accuracy(0.9, seconds=60)
    assert c.status(Progress(elapsed_s=10, epochs=1, estimate=0.85)) == RUNNING
    assert c.status(Progress(elapsed_s=10, epochs=1, estimate=0.9)) == ATTAINED
    assert c.status(Progress(elapsed_s=60, epochs=9, estimate=0.85)) == UNATTAINED
    assert c.status(Progress(elapsed_s=60, epochs=9, estimate=0.1, complete=True)) == ATTAINED


def test_convergence_and_runtime_criteria():
    c = criteria.convergence(0.01, epochs=5)
    assert c.status(Progress(1, 2, estimate=0.80, previous=0.70)) == RUNNING
    assert c.status(Progress(1, 3, estimate=0.805, previous=0.80)) == ATTAINED
    assert c.status(Progress(1, 5, estimate=0.90, previous=0.80)) == UNATTAINED
    assert criteria.runtime(epochs=3).status(Progress(1, 3, estimate=0.2)) == ATTAINED


# -- estimators -------------------------------------------------------------------------------


@pytest.mark.parametrize("live, historical, expected", [(1, 10, (0.5, 0.05)), (3, 5, (0.25, 0.05)), (0, 4, (1.0, 0.25))])
def test_live_points_and_the_historical_block_weigh_the_same(live, historical, expected):
    live_w, past_w = regression_weights(live, historical)
    assert (live_w, past_w) == pytest.approx(expected)
    assert live * live_w + historical * past_w == pytest.approx(1.0)


def test_the_estimator_starts_from_history_and_follows_live_points(tmp_path):
    feats = {"query": "q06", "words": ["lineitem", "l_discount"], "batches": 20}
    history = History(tmp_path / "history.jsonl")
    history.add(PastRun(feats, [[t, min(1.0, 0.2 + 0.1 * t)] for t in range(8)]))
    history.add(PastRun({"query": "q01", "words": ["orders"], "batches": 5}, [[t, 0.0] for t in range(8)]))
    reloaded = History(tmp_path / "history.jsonl")
    assert len(reloaded.runs) == 2
    estimator = ProgressEstimator(reloaded, k=1)
    assert estimator.predict(feats, [], at_s=3) == pytest.approx(0.5, abs=0.02)  # cold start: the similar run
    live = [(1.0, 0.6), (2.0, 0.7), (3.0, 0.8)]  # this run is ahead of history
    assert estimator.predict(feats, live, at_s=4) > estimator.predict(feats, [], at_s=4)
    assert ProgressEstimator().predict(feats, [], at_s=1) == 0.0


def test_a_corrupt_history_file_names_the_line(tmp_path):
    (tmp_path / "h.jsonl").write_text('{"features": {}, "points": []}\nnot json\n')
    with pytest.raises(ValueError, match=r"h.jsonl:2 is not a past run record"):
        History(tmp_path / "h.jsonl")


# -- policies ---------------------------------------------------------------------------------


def _jobs(n, seed):
    rng = random.Random(seed)
    return [JobView(f"j{i}", arrival_s=rng.uniform(0, 100), deadline_s=rng.uniform(100, 500),
                    threshold=rng.choice([0.6, 0.8, 0.95]), memory=rng.uniform(1, 10), estimate=rng.random(),
                    predicted=rng.random(), recent_gain=rng.choice([None, rng.random()])) for i in range(n)]


@pytest.mark.parametrize("name", list(policies.POLICIES))
@pytest.mark.parametrize("seed", range(20))
def test_every_policy_respects_cores_and_memory(name, seed):
    jobs = _jobs(random.Random(seed).randint(1, 12), seed)
    cores, memory = random.Random(seed).randint(1, 8), 25.0
    grant = policies.make(name).allocate(jobs, cores, memory)
    assert sum(grant.values()) <= cores
    assert all(1 <= c <= 2 for c in grant.values())
    if policies.POLICIES[name].uses_memory:
        assert sum(j.memory for j in jobs if j.job_id in grant) <= memory
    if any(c == 2 for c in grant.values()):  # a second core only once every job that fits has one
        left = memory - sum(j.memory for j in jobs if j.job_id in grant)
        waiting = [j for j in jobs if j.job_id not in grant]
        assert all(policies.POLICIES[name].uses_memory and j.memory > left for j in waiting)


def test_rotary_defers_a_job_that_does_not_fit_and_gives_extras_by_predicted_progress():
    jobs = [JobView("big", 0, None, 0.9, memory=50, estimate=0.1, predicted=0.9, recent_gain=None),
            JobView("a", 1, None, 0.9, memory=5, estimate=0.1, predicted=0.3, recent_gain=None),
            JobView("b", 2, None, 0.9, memory=5, estimate=0.1, predicted=0.8, recent_gain=None)]
    assert policies.make("rotary").allocate(jobs, cores=3, memory=20) == {"a": 1, "b": 2}
    # fewer cores than jobs: the first arrivals that fit get one each
    assert policies.make("rotary").allocate(jobs, cores=1, memory=20) == {"a": 1}


def test_baselines_order_by_their_own_rule():
    jobs = [JobView("late", 0, 300, 0.9, 1, estimate=0.2, predicted=0, recent_gain=0.01),
            JobView("soon", 1, 100, 0.9, 1, estimate=0.9, predicted=0, recent_gain=0.3),
            JobView("new", 2, 200, 0.9, 1, estimate=0.5, predicted=0, recent_gain=None)]
    assert set(policies.make("edf").allocate(jobs, 1, 10)) == {"soon"}
    assert set(policies.make("laf").allocate(jobs, 1, 10)) == {"late"}
    assert policies.make("relaqs").allocate(jobs, 4, 0) == {"new": 2, "soon": 1, "late": 1}
    rr = policies.make("rr")
    turns = [set(rr.allocate(jobs, 1, 10)) for _ in range(3)]
    assert turns == [{"late"}, {"soon"}, {"new"}]


def test_unknown_policy_lists_the_known_ones():
    with pytest.raises(ValueError, match="choose from rotary, rr, edf, laf, relaqs"):
        policies.make("fifo")
