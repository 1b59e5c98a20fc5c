"""Completion criteria, estimators and arbitration policies (pure Python, no Spark)."""

import random
from dataclasses import replace

import pytest

from spark_plugin.rotary import policies
from spark_plugin.shared import criteria
from spark_plugin.shared.criteria import ATTAINED, RUNNING, UNATTAINED, Progress
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


ACC_FORM = "Write UNTIL ACC >= A [WITHIN N SECONDS|EPOCHS] with 0 < A <= 1, e.g. 'UNTIL ACC >= 0.95 WITHIN 360 SECONDS'."
RUN_FORM = "Write RUN FOR N SECONDS|EPOCHS, e.g. 'RUN FOR 120 SECONDS'."


@pytest.mark.parametrize("text, message", [
    ("UNTIL ACC >= 2 WITHIN -5 SECONDS",
     f"'UNTIL ACC >= 2 WITHIN -5 SECONDS': accuracy 2 is outside 0-1; WITHIN -5 SECONDS: a time must be positive. "
     f"{ACC_FORM}"),
    ("UNTIL ACC > 0.9", f"'UNTIL ACC > 0.9': ACC > 0.9: the accuracy is compared with >=. {ACC_FORM}"),
    ("UNTIL ACC >= 1.5", f"'UNTIL ACC >= 1.5': accuracy 1.5 is outside 0-1. {ACC_FORM}"),
    ("UNTIL ACC >= high", f"'UNTIL ACC >= high': accuracy 'high' is not a number. {ACC_FORM}"),
    ("UNTIL ACC >= 0.9 WITHIN 5 MINUTES",
     f"'UNTIL ACC >= 0.9 WITHIN 5 MINUTES': WITHIN 5 MINUTES: a budget is a number then SECONDS or EPOCHS. "
     f"{ACC_FORM}"),
    ("UNTIL CONVERGE(ACC, 2) WITHIN 2.5 EPOCHS",
     "'UNTIL CONVERGE(ACC, 2) WITHIN 2.5 EPOCHS': convergence delta 2 is outside 0-1; WITHIN 2.5 EPOCHS: epochs "
     "are a whole number >= 1. Write UNTIL CONVERGE(ACC, D) [WITHIN N SECONDS|EPOCHS] with 0 < D < 1, e.g. "
     "'UNTIL CONVERGE(ACC, 0.001) WITHIN 30 EPOCHS'."),
    ("RUN FOR 0 SECONDS", f"'RUN FOR 0 SECONDS': FOR 0 SECONDS: a time must be positive. {RUN_FORM}"),
    ("RUN FOR 3 SECONDS WITHIN 4 EPOCHS",
     f"'RUN FOR 3 SECONDS WITHIN 4 EPOCHS': RUN FOR takes no WITHIN: its budget follows FOR. {RUN_FORM}"),
])
def test_bad_criteria_name_the_wrong_part_and_the_accepted_form(text, message):
    with pytest.raises(criteria.CriterionError) as refused:
        criteria.parse(text)
    assert str(refused.value) == message


def test_text_that_is_no_criterion_lists_the_three_forms():
    with pytest.raises(ValueError, match=r"^'WAIT 5' is not a completion criterion\. Write one of: UNTIL ACC >= A "
                                         r".*; UNTIL CONVERGE\(ACC, D\) .*; RUN FOR N SECONDS\|EPOCHS "
                                         r"\(e\.g\. 'RUN FOR 120 SECONDS'\)\.$"):
        criteria.parse("WAIT 5")


def test_accuracy_is_attained_at_the_threshold_and_unattained_at_the_deadline():
    c = criteria.accuracy(0.9, seconds=60)
    assert c.status(Progress(elapsed_s=10, epochs=1, estimate=0.85)) == RUNNING
    assert c.status(Progress(elapsed_s=10, epochs=1, estimate=0.9)) == ATTAINED
    assert c.status(Progress(elapsed_s=60, epochs=9, estimate=0.85)) == UNATTAINED
    assert c.status(Progress(elapsed_s=60, epochs=9, estimate=0.1, complete=True)) == ATTAINED


def test_a_criterion_met_after_the_deadline_is_not_attained():
    c = criteria.accuracy(0.9, seconds=60)
    assert c.status(Progress(elapsed_s=61, epochs=9, estimate=0.95)) == UNATTAINED
    assert c.status(Progress(elapsed_s=61, epochs=9, estimate=1.0, complete=True)) == UNATTAINED
    converge = criteria.convergence(0.01, epochs=5)
    assert converge.status(Progress(1, 5, estimate=0.805, previous=0.80)) == ATTAINED  # on the last epoch
    assert converge.status(Progress(1, 6, estimate=0.805, previous=0.80)) == UNATTAINED
    assert criteria.runtime(seconds=30).status(Progress(31, 4, estimate=0.5, complete=True)) == ATTAINED


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
                    recent_gain=rng.choice([None, rng.random()]), now_s=100, processing_s=rng.uniform(0, 50),
                    needed_s=rng.choice([None, rng.uniform(1, 300)]), next_estimate=rng.choice([None, rng.random()]))
            for i in range(n)]


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


def test_slack_is_the_time_to_spare_if_the_job_ran_from_now_until_it_attains():
    job = JobView("a", arrival_s=0, deadline_s=100, threshold=0.9, memory=1, estimate=0.5, recent_gain=None,
                  now_s=50, processing_s=10, needed_s=30)
    assert job.slack_s == 30  # 50 s to the deadline, 20 s of work left
    assert replace(job, needed_s=70).slack_s == -10  # predicted to miss
    assert replace(job, needed_s=5).slack_s == 50  # already past its need (it attains this epoch)
    assert replace(job, needed_s=None).slack_s is None
    assert replace(job, deadline_s=None).slack_s == float("inf")


def _ranked(job_id, memory, needed_s, arrival_s, deadline_s=100):
    return JobView(job_id, arrival_s, deadline_s, 0.9, memory=memory, estimate=0.1, recent_gain=None, now_s=10,
                   processing_s=2, needed_s=needed_s)


def _progressing(job_id, arrival_s, memory, next_estimate, threshold=0.8):
    return JobView(job_id, arrival_s, 100, threshold, memory=memory, estimate=0.1, recent_gain=None,
                   next_estimate=next_estimate)


def test_algorithm_4_serves_arrivals_that_fit_then_extras_by_predicted_progress():
    jobs = [_progressing("first", 0, memory=5, next_estimate=0.2),
            _progressing("big", 1, memory=50, next_estimate=0.9),  # does not fit: deferred
            _progressing("near", 2, memory=5, next_estimate=0.7),  # phi-hat 0.875
            _progressing("done", 3, memory=5, next_estimate=0.5, threshold=0.5),  # phi-hat 1
            _progressing("cold", 4, memory=5, next_estimate=None)]  # nothing to predict from: phi-hat 0
    rotary = policies.make("rotary")
    assert rotary.allocate(jobs, cores=6, memory=20) == {"first": 1, "near": 2, "done": 2, "cold": 1}
    assert rotary.allocate(jobs, cores=5, memory=20) == {"first": 1, "near": 1, "done": 2, "cold": 1}
    # fewer cores than jobs: arrival order, as the author's code does
    assert rotary.allocate(jobs, cores=2, memory=20) == {"first": 1, "near": 1}
    assert rotary.allocate(jobs, cores=2, memory=100) == {"first": 1, "big": 1}
    assert rotary.allocate(jobs, cores=8, memory=14) == {"first": 2, "near": 2}  # memory for two only


def test_rotary_deadline_defers_a_job_that_does_not_fit_and_serves_its_queue_by_predicted_attainment():
    jobs = [_ranked("big", memory=50, needed_s=None, arrival_s=0),  # unknown: first, but does not fit
            _ranked("a", memory=5, needed_s=30, arrival_s=1, deadline_s=120),  # attains
            _ranked("b", memory=5, needed_s=80, arrival_s=2),  # attains, earlier deadline
            _ranked("c", memory=5, needed_s=500, arrival_s=3, deadline_s=90)]  # would miss its deadline
    rotary = policies.make("rotary-deadline")
    assert rotary.allocate(jobs, cores=4, memory=20) == {"b": 2, "a": 1, "c": 1}
    # fewer cores than jobs: the queue's head first, whatever the arrival order
    assert rotary.allocate(jobs, cores=2, memory=20) == {"b": 1, "a": 1}
    assert rotary.allocate(jobs, cores=1, memory=20) == {"b": 1}
    assert rotary.allocate(jobs, cores=1, memory=100) == {"big": 1}
    # among jobs predicted to miss, the nearest miss first
    missing = [_ranked("far", 1, 900, 0), _ranked("near", 1, 120, 1)]
    assert rotary.allocate(missing, cores=1, memory=20) == {"near": 1}


def test_the_random_estimator_ablation_is_seeded_and_keeps_algorithm_4():
    jobs = _jobs(8, seed=1)
    grants = [policies.make("rotary-random").allocate(jobs, 5, 1e9) for _ in range(2)]
    assert grants[0] == grants[1] and sum(grants[0].values()) == 5 and len(grants[0]) == 5


def _valued(job_id, estimate, next_estimate, needed_s, deadline_s=100.0, memory=1.0):
    """A job at 50 s of a 100 s budget (10 s processed), threshold 0.8, next epoch 5 s."""
    return JobView(job_id, 0.0, deadline_s, 0.8, memory=memory, estimate=estimate, recent_gain=None, now_s=50,
                   processing_s=10, needed_s=needed_s, next_estimate=next_estimate, next_epoch_s=5.0)


def test_a_jobs_utility_is_its_predicted_progress_less_its_predicted_lateness_per_budget():
    policy = policies.make("utility-sum")
    on_time = _valued("on-time", estimate=0.4, next_estimate=0.56, needed_s=30)  # slack 30 s, gains 0.2 per core
    assert policy.utilities(on_time) == pytest.approx([0.5, 0.7, 0.9])  # waiting one epoch costs no lateness
    late = _valued("late", estimate=0.4, next_estimate=0.56, needed_s=80)  # 20 s late, 5 s more per idle epoch
    assert policy.utilities(late) == pytest.approx([0.5 - 25 / 100, 0.7 - 20 / 100, 0.9 - 15 / 100])
    assert policy.utilities(_valued("near", 0.72, 0.8, needed_s=30)) == pytest.approx([0.9, 1.0, 1.0])  # capped
    cold = _valued("cold", estimate=0.0, next_estimate=None, needed_s=None)  # nothing to predict: tried once
    assert policy.utilities(cold) == pytest.approx([0.0, 1.0, 1.0])


def test_max_sum_serves_the_largest_gain_and_max_min_the_worst_job():
    jobs = [_valued("gaining", estimate=0.4, next_estimate=0.64, needed_s=30),  # +0.3 per core, on time
            _valued("late", estimate=0.4, next_estimate=0.48, needed_s=90)]  # +0.1 and 0.05 lateness per core
    assert policies.make("utility-sum").allocate(jobs, cores=1, memory=10) == {"gaining": 1}
    assert policies.make("utility-min").allocate(jobs, cores=1, memory=10) == {"late": 1}
    assert policies.make("utility-sum").allocate(jobs, cores=3, memory=10) == {"gaining": 2, "late": 1}
    assert policies.make("utility-min").allocate(jobs, cores=3, memory=10) == {"gaining": 1, "late": 2}
    # memory still binds: the worst job does not fit, so max-min serves the other
    assert policies.make("utility-min").allocate([jobs[0], replace(jobs[1], memory=50)], 1, 10) == {"gaining": 1}


def test_on_progress_alone_max_min_serves_the_least_advanced_job_not_the_latest():
    jobs = [_valued("advanced-but-late", estimate=0.56, next_estimate=0.64, needed_s=120),  # 0.7, 60 s late
            _valued("behind-on-time", estimate=0.16, next_estimate=0.24, needed_s=30)]  # 0.2
    assert policies.make("utility-min").allocate(jobs, cores=1, memory=10) == {"advanced-but-late": 1}
    assert policies.make("utility-min-progress").allocate(jobs, cores=1, memory=10) == {"behind-on-time": 1}
    assert policies.make("utility-sum-progress").utilities(jobs[0]) == pytest.approx([0.7, 0.8, 0.9])  # no lateness


def test_a_job_whose_epochs_make_less_than_predicted_is_corrected_by_its_measured_demand():
    policy = policies.make("utility-sum")
    job = _valued("slow", estimate=0.4, next_estimate=0.56, needed_s=30)  # predicted +0.2 per core
    assert policy.allocate([job], cores=1, memory=10) == {"slow": 1}
    after = replace(job, estimate=0.44, next_estimate=0.6)  # made +0.05 of the predicted +0.2: 4x the demand
    assert policy.mu("slow") == 1.0
    policy.allocate([after], cores=1, memory=10)
    assert policy.mu("slow") == pytest.approx(4.0)
    assert policy.utilities(after) == pytest.approx([0.55, 0.6, 0.65])  # each core now adds 0.2 / 4
    untouched = policies.make("utility-sum")
    untouched.allocate([after], cores=1, memory=10)  # a job not granted before has nothing to compare
    assert untouched.mu("slow") == 1.0


def test_time_to_a_level_reads_the_fitted_curve_and_stops_at_the_whole_run():
    feats = {"query": "q06", "words": ["lineitem"], "batches": 20}
    history = History()
    history.add(PastRun(feats, [[t, t / 10] for t in range(11)]))  # accuracy t/10, whole run 10 s
    estimator = ProgressEstimator(history)
    assert estimator.run_length_s(feats) == 10
    assert estimator.time_to(feats, [], 0.5, horizon_s=10) == pytest.approx(5, abs=10 / 63)
    assert estimator.time_to(feats, [], 1.5, horizon_s=10) == 10  # never before the end: the exact answer
    assert estimator.time_to(feats, [(12.0, 0.2)], 0.9, horizon_s=10) == 10
    assert ProgressEstimator().time_to(feats, [], 0.5, horizon_s=10) is None
    assert ProgressEstimator().run_length_s(feats) is None


def test_baselines_order_by_their_own_rule():
    jobs = [JobView("late", 0, 300, 0.9, 1, estimate=0.2, recent_gain=0.01),
            JobView("soon", 1, 100, 0.9, 1, estimate=0.9, recent_gain=0.3),
            JobView("new", 2, 200, 0.9, 1, estimate=0.5, recent_gain=None)]
    assert set(policies.make("edf").allocate(jobs, 1, 10)) == {"soon"}
    assert set(policies.make("laf").allocate(jobs, 1, 10)) == {"late"}
    assert policies.make("relaqs").allocate(jobs, 4, 0) == {"new": 2, "soon": 1, "late": 1}
    rr = policies.make("rr")
    turns = [set(rr.allocate(jobs, 1, 10)) for _ in range(3)]
    assert turns == [{"late"}, {"soon"}, {"new"}]


def test_unknown_policy_lists_the_known_ones():
    with pytest.raises(ValueError, match="choose from rotary, rotary-deadline, rr, edf, laf, relaqs, rotary-random, "
                                         "utility-sum, utility-min, utility-sum-progress, utility-min-progress"):
        policies.make("fifo")


def test_only_similar_past_runs_shape_the_curve_unless_none_is_similar():
    q06 = {"query": "q06", "words": ["lineitem", "l_discount"], "batches": 20}
    q01 = {"query": "q01", "words": ["lineitem", "l_tax"], "batches": 20}  # Jaccard 1/3 with q06
    history = History()
    history.add(PastRun(q06, [[t, t / 10] for t in range(11)]))
    history.add(PastRun(q01, [[t, 1.0] for t in range(11)]))
    assert [r.features["query"] for r in history.nearest(q06, 5, min_similarity=0.8)] == ["q06"]
    assert [r.features["query"] for r in history.nearest(q06, 5)] == ["q06", "q01"]
    q14 = {"query": "q14", "words": ["part"], "batches": 20}
    assert len(history.nearest(q14, 5, min_similarity=0.8)) == 1  # none similar: the nearest alone
    assert ProgressEstimator(history).predict(q06, [], at_s=5) == pytest.approx(0.5, abs=0.01)
