"""Rotary-DLT's arbiter with real Keras training, at times the test sets (a manual clock that training
does not move, so budgets in epochs and arrivals decide everything)."""

import pytest

from tests.helpers import ManualClock

from .conftest import make_mlp

pytestmark = pytest.mark.tf


def compiled(seed, hidden=16):
    model = make_mlp(seed, hidden=hidden)
    model.compile(model.optimizer, "sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


@pytest.fixture
def arbiter(tf_det, toy_data):
    from tf_packing.dlt import DltArbiter

    x, y = toy_data
    clock = ManualClock()

    def make(**kwargs):
        return DltArbiter(x[:240], y[:240], (x[240:], y[240:]), clock=clock, sleep=clock.advance, **kwargs)

    return make


def test_jobs_train_in_policy_order_wait_for_their_arrival_and_leave_when_their_criterion_decides(arbiter):
    from tf_packing.dlt import DltJob

    jobs = [DltJob("a", lambda: compiled(1), "RUN FOR 3 EPOCHS"),
            DltJob("b", lambda: compiled(2), "RUN FOR 2 EPOCHS", arrival_s=5.0),
            DltJob("never", lambda: compiled(3), "UNTIL ACC >= 0.999 WITHIN 2 EPOCHS", arrival_s=5.0)]
    run = arbiter(policy="fifo")
    results = {r["job"]: r for r in run.run(jobs)}
    assert [r["chosen"] for r in run.rounds_] == [["a"]] * 3 + [["b"]] * 2 + [["never"]] * 2
    assert [r["time"] for r in run.rounds_][2:4] == [0.0, 5.0]  # "b" waited for its arrival
    assert {n: (r["status"], r["epochs"]) for n, r in results.items()} == {
        "a": ("attained", 3), "b": ("attained", 2), "never": ("unattained", 2)}
    assert len(run.history.similar("a")) == 1 and len(run.history.similar("never")[0].accuracies) == 2


def test_rotary_dlt_alternates_to_the_job_behind_and_packing_trains_the_chosen_jobs_together(arbiter):
    from tf_packing.dlt import DltJob

    def workload():
        return [DltJob("a", lambda: compiled(4), "RUN FOR 4 EPOCHS"), DltJob("b", lambda: compiled(5), "RUN FOR 2 EPOCHS")]

    alone = arbiter(policy="rotary-dlt", threshold=1.0)  # all fairness: the job with less progress first
    alone.run(workload())
    # progress is epochs over budget: a 1/4 per epoch, b 1/2; ties go by arrival, then name
    assert [r["chosen"] for r in alone.rounds_] == [["a"], ["b"], ["a"], ["a"], ["b"], ["a"]]
    packed = arbiter(policy="rotary-dlt", threshold=1.0, pack=True)
    results = packed.run(workload())
    assert [sorted(r["chosen"]) for r in packed.rounds_] == [["a", "b"], ["a", "b"], ["a"], ["a"]]
    assert [r["status"] for r in results] == ["attained", "attained"]
    assert all(0 <= r["accuracy"] <= 1 for r in results)


def test_a_workload_that_fits_no_memory_is_refused_naming_the_key(arbiter):
    from tf_packing.dlt import DltJob

    with pytest.raises(ValueError, match="no active job fits in memory_bytes=1: .*Raise memory_bytes"):
        arbiter(memory_bytes=1).run([DltJob("a", lambda: compiled(6), "RUN FOR 1 EPOCHS")])


def test_each_job_is_estimated_again_only_after_it_trains_or_a_similar_job_finishes(arbiter, monkeypatch):
    from tf_packing.dlt import DltJob, arbiter as module

    asked = []
    real = module.epochs_needed
    monkeypatch.setattr(module, "epochs_needed", lambda c, acc, past: asked.append(len(acc)) or real(c, acc, past))
    jobs = [DltJob("a", lambda: compiled(7), "RUN FOR 3 EPOCHS"), DltJob("b", lambda: compiled(8), "RUN FOR 2 EPOCHS")]
    run = arbiter(policy="fair")
    results = run.run(jobs)
    # 5 rounds, 2 views each while both are active, yet one estimate per job per epoch trained (0..2 for a)
    assert len(run.rounds_) == 5 and sorted(asked) == [0, 0, 1, 1, 2]
    assert [len(r["accuracies"]) for r in results] == [3, 2]
    assert all(len(r["epoch_end_s"]) == len(r["accuracies"]) for r in results)

    asked.clear()  # now of one kind: when "long" finishes, "short" is estimated again with it in its history
    jobs = [DltJob("short", lambda: compiled(7), "RUN FOR 1 EPOCHS", kind="mlp"),
            DltJob("long", lambda: compiled(8), "RUN FOR 2 EPOCHS", kind="mlp")]
    arbiter(policy="fifo").run(jobs)  # same arrival: "long" first, by name
    assert asked == [0, 0, 1, 0]  # both at 0; "long" after its epoch; "short", still at 0, once "long" finished


def test_a_seeded_job_trains_the_same_whichever_jobs_ran_before_it(arbiter):
    import keras

    from tf_packing.dlt import DltJob

    def reseeding():  # a job whose build seeds Keras, as many scripts do, resets the state the others draw from
        keras.utils.set_random_seed(99)
        return compiled(11)

    def workload(*others):  # two epochs each: c is built (and reseeds) between a's and b's first and second
        return [DltJob("a", lambda: compiled(9), "RUN FOR 2 EPOCHS", seed=1),
                DltJob("b", lambda: compiled(10), "RUN FOR 2 EPOCHS", seed=2), *others]

    fifo = {r["job"]: r["accuracies"] for r in arbiter(policy="fifo").run(workload())}
    run = arbiter(policy="fair")
    fair = {r["job"]: r["accuracies"] for r in run.run(workload(DltJob("c", reseeding, "RUN FOR 1 EPOCHS",
                                                                       arrival_s=0.0)))}
    assert [r["chosen"] for r in run.rounds_] == [["a"], ["b"], ["c"], ["a"], ["b"]]  # c ran in between
    assert fifo["a"] == fair["a"] and fifo["b"] == fair["b"]  # in turns with c, or one after the other


@pytest.mark.parametrize("kw, message", [
    (dict(pack=True, max_pack=0), r"^DltArbiter's max_pack must be a whole number in \[1, 64\]\. Got 0\. "
                                  r"Pass e\.g\. 4 \(1 trains one job at a time\)\.$"),
    (dict(max_pack=2.5), r"^DltArbiter's max_pack must be a whole number in \[1, 64\]\. Got 2\.5\."),
    (dict(threshold=1.5), r"^DltArbiter's threshold \(T\) must be a finite number >= 0 and <= 1\. Got 1\.5\. "
                          r"Pass e\.g\. 0\.5"),
    (dict(memory_bytes=0), r"^DltArbiter's memory_bytes must be a finite number > 0\. Got 0\. Pass the device's bytes"),
    (dict(policy="lifo"), r"^DltArbiter's policy must be one of rotary-dlt, .*\. Got 'lifo'\.$"),
])
def test_a_bad_arbiter_argument_is_refused_in_one_line_naming_it(arbiter, kw, message):
    from spark_plugin.errors import UsageError

    with pytest.raises(UsageError, match=message):
        arbiter(**kw)


@pytest.mark.parametrize("kw, message", [
    (dict(criterion=None), r"^DltJob 'a' needs a completion criterion\. Got None\. Pass e\.g\. 'RUN FOR 10 EPOCHS' "),
    (dict(batch_size=0), r"^DltJob 'a''s batch_size must be a whole number in \[1, 65536\]\. Got 0\. Pass e\.g\. 32"),
    (dict(arrival_s=-1.0), r"^DltJob 'a''s arrival_s must be a finite number >= 0\. Got -1\.0\."),
    (dict(seed="1"), r"^DltJob 'a''s seed must be a whole number in \[0, 4294967295\]\. Got '1'\."),
    (dict(build=None), r"^DltJob 'a': build must be a function returning a compiled Keras model\. Got None\."),
])
def test_a_bad_job_is_refused_where_it_is_made_naming_the_job(tf_det, kw, message):
    from spark_plugin.errors import UsageError
    from tf_packing.dlt import DltJob

    with pytest.raises(UsageError, match=message):
        DltJob(**{"name": "a", "build": lambda: compiled(1), "criterion": "RUN FOR 1 EPOCHS", **kw})


def test_a_criterion_text_that_does_not_parse_names_the_job(tf_det):
    from spark_plugin.shared.criteria import CriterionError
    from tf_packing.dlt import DltJob

    with pytest.raises(CriterionError, match=r"^DltJob 'a': 'RUN 3' is not a completion criterion\. Write one of"):
        DltJob("a", lambda: compiled(1), "RUN 3")


def test_a_job_whose_model_logs_no_accuracy_is_refused_before_it_trains(arbiter):
    from spark_plugin.errors import UsageError
    from tf_packing.dlt import DltJob

    run = arbiter(policy="fifo")
    with pytest.raises(UsageError, match=r"^DltJob 'plain': its model logs no 'accuracy' metric, .* Compile it with "
                                         r"metrics=\['accuracy'\]\.$"):
        run.run([DltJob("plain", lambda: make_mlp(12), "RUN FOR 1 EPOCHS")])
    assert run.rounds_ == []  # refused as it arrived: nothing trained
