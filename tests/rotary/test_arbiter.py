"""Concurrent approximate jobs in one application on local-cluster, under each arbitration policy."""

from pathlib import Path

import pyarrow.compute as pc
import pytest

import spark_plugin
from benchmarks.tpch.data import ensure_dataset
from spark_plugin import rotary
from spark_plugin.rotary import policies
from spark_plugin.rotary import workload as wl
from spark_plugin.rotary.arbiter import Arbiter
from spark_plugin.rotary.workload import WorkloadJob
from spark_plugin.telemetry_reader import max_concurrent_tasks
from tests.helpers import ManualClock

pytestmark = pytest.mark.spark

SPARK_SESSION = dict(master="local-cluster[2,1,1024]", features=["telemetry"], conf={"spark.scheduler.mode": "FAIR"})
BATCHES = 4
DEFINITION = Path(__file__).parents[2] / "conf" / "rotary" / "table-3.1.json"


@pytest.fixture(scope="module")
def data(spark, session_dir):
    return rotary.prepare(spark, ensure_dataset(session_dir / "tpch", 0.01, 2), BATCHES)


@pytest.fixture(scope="module")
def exact():
    """Exact answers by query for every arbiter of the module (``exact_answers``, as the workload benchmark shares
    them across its runs): they only score each record's true accuracy, and each is computed once, by the first
    arbiter that runs its query, instead of by every arbiter again."""
    return {}


def _workload():
    return [WorkloadJob("a", 6, "light", 0.95, 60.0, 0.0), WorkloadJob("b", 1, "light", 0.6, 60.0, 0.0),
            WorkloadJob("c", 5, "medium", 0.9, 60.0, 0.0)]


# rotary: grants of 1 or 2 cores held for adaptive epochs; three jobs on two cores start as two one-core epochs
# at once while the third waits. The arbiter applies any policy's grants through these same paths: rr (one
# core per job and epoch) was a second run of them here, with no line of spark_plugin of its own (branch
# coverage per test); its grants run in the three tests below, one-core epochs checked from telemetry in the
# next. utility-min (1 or 2 cores, one epoch each) was a third. Their choices are tested without Spark
# (test_arbitration_rules.py) and utility-min runs a workload end to end in the benchmark's smoke run
# (test_benchmark.py).
def test_every_job_ends_and_each_epoch_runs_with_its_granted_cores(spark, data, exact, tmp_path):
    tm = spark_plugin.telemetry(spark)
    mark = tm.mark()
    arbiter = Arbiter(spark, data, policies.make("rotary"), batches=BATCHES, cores=2, epoch_s=0.3,
                      checkpoint_dir=tmp_path / "checkpoints", exact_answers=exact)
    records = arbiter.run(_workload())
    assert sorted(r["job_id"] for r in records) == ["a", "b", "c"]
    for r in records:
        assert r["status"] in ("attained", "unattained")
        assert 0 <= r["true_accuracy"] <= 1 and r["waiting_s"] >= 0
        if r["status"] == "attained" and r["batches_done"] < BATCHES:  # stopped early on its envelope
            assert r["estimate"] >= r["threshold"]
    # Three jobs arrive together on two cores: at the first arbitration at least one sits out. (The
    # arbitration's overhead is a benchmark figure, benchmarks/rotary, not asserted here.)
    assert any(r["waits"] > 0 for r in records)
    assert not any((tmp_path / "checkpoints").glob("*/state.json")), "checkpoints go with their jobs"
    tasks = tm.records(since=mark)["task"]
    groups = pc.unique(tasks["jobGroup"]).to_pylist()
    epochs = [g for g in groups if g and g.startswith("rotary-")]
    assert epochs
    for group in epochs:
        cores = int(group.rsplit("-c", 1)[1])
        mine = tasks.filter(pc.equal(tasks["jobGroup"], group))
        for stage in pc.unique(mine["stageId"]).to_pylist():  # scans included
            assert len(mine.filter(pc.equal(mine["stageId"], stage))) <= cores, f"{group}: a stage wider than its cores"
        assert max_concurrent_tasks(mine, on_executor=True) <= cores, f"{group}: more tasks at once than its cores"


def test_a_static_view_cached_by_a_wider_query_is_read_no_wider_than_the_grant(spark, data, exact, tmp_path):
    """Q7's static views, cached by a query on the whole cluster first (as the workload benchmark's warm-up
    does), are read by the arbiter's one-core epochs one task at a time, with the same answer."""
    with rotary.ProgressiveQuery(spark, 7, data.data, BATCHES, data.seed) as wide:
        wide.step()  # computes and caches the statics with the default parallelism
        tm = spark_plugin.telemetry(spark)
        mark = tm.mark()
        arbiter = Arbiter(spark, data, policies.make("rr"), batches=BATCHES, cores=1, epoch_s=0.3,
                          checkpoint_dir=tmp_path, exact_answers=exact)
        records = arbiter.run([WorkloadJob("q7", 7, "heavy", 0.999, 120.0, 0.0)])
    assert records[0]["batches_done"] == BATCHES and records[0]["true_accuracy"] == 1.0
    tasks = tm.records(since=mark)["task"]
    epochs = [g for g in pc.unique(tasks["jobGroup"]).to_pylist() if g and g.startswith("rotary-")]
    assert epochs
    for group in epochs:
        mine = tasks.filter(pc.equal(tasks["jobGroup"], group))
        assert max_concurrent_tasks(mine, on_executor=True) == 1, f"{group}: more tasks at once than its core"


def test_a_paused_job_resumes_from_its_checkpoint_where_it_stopped(spark, data, exact, tmp_path):
    jobs = [WorkloadJob("x", 1, "light", 0.99, 60.0, 0.0), WorkloadJob("y", 6, "light", 0.99, 60.0, 0.0)]
    arbiter = Arbiter(spark, data, policies.make("rr"), batches=BATCHES, cores=1, epoch_s=0.1,
                      checkpoint_dir=tmp_path, exact_answers=exact)
    records = {r["job_id"]: r for r in arbiter.run(jobs)}
    # One core, two jobs taking turns: each was paused at least once and still processed every batch.
    assert all(r["checkpoints"] >= 1 for r in records.values())
    assert all(r["batches_done"] == BATCHES and r["true_accuracy"] == 1.0 for r in records.values())


def test_a_job_arriving_mid_run_is_admitted_at_the_first_boundary_after_its_arrival(spark, data, exact, tmp_path):
    # The loop's time is the test's: every reading moves it 0.05 s and a wait moves it by what was waited, so
    # an epoch of 0.1 s is one batch and "early" needs four epochs. "late" arrives at 0.5 s, while "early" runs; "last" arrives at 30 s, after both ended, so the loop
    # sleeps (on this clock) until it comes.
    clock = ManualClock(tick=0.05)
    jobs = [WorkloadJob("early", 6, "light", 0.99, 60.0, 0.0), WorkloadJob("late", 1, "light", 0.99, 60.0, 0.5),
            WorkloadJob("last", 6, "light", 0.99, 60.0, 30.0)]
    arbiter = Arbiter(spark, data, policies.make("rr"), batches=BATCHES, cores=2, epoch_s=0.1,
                      checkpoint_dir=tmp_path, clock=clock, sleep=clock.advance, exact_answers=exact)
    records = {r["job_id"]: r for r in arbiter.run(jobs)}
    assert records["early"]["admitted_s"] < 0.1  # the first boundary
    assert 0.5 <= records["late"]["admitted_s"] < records["early"]["finish_s"], records
    assert max(records["early"]["finish_s"], records["late"]["finish_s"]) < 30.0 <= records["last"]["admitted_s"]
    assert records["last"]["admitted_s"] < 30.0 + 0.1  # woken at its arrival, not an epoch late
    assert all(r["batches_done"] == BATCHES and r["true_accuracy"] == 1.0 for r in records.values())


def test_table_3_1_workloads_are_seeded_and_scaled():
    definition = wl.load_definition(DEFINITION)
    a = wl.generate(definition, seed=3, time_scale=0.1)
    assert a == wl.generate(definition, seed=3, time_scale=0.1) and a != wl.generate(definition, seed=4, time_scale=0.1)
    assert len(a) == 30 and a[0].arrival_s == 0
    assert all(j.query in rotary.available() for j in a)
    assert {j.kind for j in a} == {"light", "medium", "heavy"}
    light = definition["classes"]["light"]["deadlines_s"]
    assert all(j.deadline_s in [d * 0.1 for d in light] for j in a if j.kind == "light")
    heavy = wl.generate(definition, seed=3, mix={"heavy": 1})
    assert {j.kind for j in heavy} == {"heavy"}
    with pytest.raises(ValueError, match="unknown job class 'huge'"):
        wl.generate(definition, mix={"huge": 1})


def test_a_checkpoint_folder_of_the_users_is_refused_before_any_job_runs(spark, tmp_path):
    from spark_plugin.errors import NotOursError, UsageError

    (tmp_path / "checkpoints" / "b").mkdir(parents=True)
    (tmp_path / "checkpoints" / "b" / "notes.txt").write_text("mine")  # where job b would checkpoint
    with pytest.raises(UsageError, match=r"batches must be a whole number in \[2, 1000\]"):
        Arbiter(spark, None, policies.make("rotary"), batches=100000, checkpoint_dir=tmp_path / "checkpoints")
    arbiter = Arbiter(spark, None, policies.make("rotary"), batches=BATCHES, checkpoint_dir=tmp_path / "checkpoints")
    with pytest.raises(NotOursError, match=r"checkpoints/b holds files sparkrm did not write \(notes.txt\)"):
        arbiter.run(_workload())  # before any exact answer or epoch: the data is never read
    assert (tmp_path / "checkpoints" / "b" / "notes.txt").read_text() == "mine"
