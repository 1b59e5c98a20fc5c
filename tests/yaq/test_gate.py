"""Yaq's gate on a real driver: release order, work learned from telemetry, Pigeon's pools, properties."""

import threading

import pytest

from spark_plugin.errors import NotOursError, UsageError
from spark_plugin.job_history import JobHistory
from spark_plugin.pigeon import LONG, SHORT, ShortJobPools
from spark_plugin.yaq import JobGate
from tests.helpers import eventually

SPARK_SESSION = dict(master="local[2]", features=["telemetry"], conf={"spark.scheduler.mode": "FAIR"})


def test_waiting_jobs_are_released_least_work_first_and_each_jobs_work_is_learned(spark, tmp_path):
    history = JobHistory().record("long", task_s=60.0, tasks=100).record("short", task_s=1.0, tasks=2)
    gate = JobGate(spark, policy="srjf", max_in_flight=1, hard_s=600.0, history=history)
    blocker_in, release_blocker = threading.Event(), threading.Event()
    started = []

    def blocker():
        with gate.job("blocker"):
            blocker_in.set()
            release_blocker.wait(60)

    def run(shape):
        with gate.job(shape):
            started.append(shape)
            spark.sparkContext.parallelize(range(1000), 4).map(lambda x: x * x).sum()

    threads = [threading.Thread(target=blocker)]
    threads[0].start()
    assert blocker_in.wait(60)
    for shape in ("long", "short"):  # the long job arrives first
        threads.append(threading.Thread(target=run, args=(shape,)))
        threads[-1].start()
        eventually(lambda: len(gate._waiting) == len(threads) - 1, timeout=30)
    release_blocker.set()
    for t in threads:
        t.join(timeout=120)
    assert started == ["short", "long"]
    # Each job's work is what telemetry measured for its own job group: 4 tasks per run.
    short = [a for a in gate.admissions if a.shape == "short"][0]
    assert short.tasks == 4 and short.task_s > 0 and short.waited_s > 0
    assert history.estimate("short").runs == 2 and history.estimate("blocker") is None  # ran no Spark job


def test_the_router_sends_short_work_to_the_reserved_pool_and_the_thread_gets_its_properties_back(spark, tmp_path):
    sc = spark.sparkContext
    path = str(tmp_path / "history.json")
    JobHistory().record("etl", task_s=1e4, tasks=5000).save(path)
    gate = JobGate(spark, history=path, router=ShortJobPools(sc.defaultParallelism, max_length_s=5.0))
    root = sc._jsc.sc().taskScheduler().rootPool()
    assert root.getSchedulableByName(SHORT).weight() == 20 and root.getSchedulableByName(SHORT).minShare() == 1
    sc.setLocalProperty("spark.scheduler.pool", "mine")
    pools = {}
    for shape in ("etl", "lookup"):
        with gate.job(shape):
            pools[shape] = sc.getLocalProperty("spark.scheduler.pool")
            sc.parallelize(range(10), 2).count()
    assert pools == {"etl": LONG, "lookup": SHORT}
    assert sc.getLocalProperty("spark.scheduler.pool") == "mine" and sc.getLocalProperty("spark.jobGroup.id") is None
    assert JobHistory.load(path).estimate("lookup").tasks == 2  # written back as jobs finish
    rows = gate.sql("SELECT 1 AS one")
    assert rows[0].one == 1 and gate.admissions[-1].shape.startswith("sql-")


@pytest.mark.parametrize("kwargs, message", [
    ({"policy": "shortest"}, "JobGate's policy must be one of 'srjf', 'lrtf', 'fifo' (as spark.yaq.policy). "
                             "Got 'shortest'. Pass e.g. srjf."),
    ({"policy": ""}, "JobGate's policy must be one of 'srjf', 'lrtf', 'fifo' (as spark.yaq.policy). Got ''."),
    ({"max_in_flight": 0}, "JobGate's max_in_flight must be an integer in [1, 100000] (as spark.yaq.maxInFlight). "
                           "Got 0. Pass e.g. 4."),
    ({"hard_s": -5}, "JobGate's hard_s (-5 s) must be a duration in [1ms, 24h] (as spark.yaq.starvation.threshold)."),
    ({"ratio": -1}, "JobGate's ratio must be a number > 0 (as spark.yaq.starvation.ratio). Got -1. Pass e.g. 4.0."),
])
def test_a_bad_argument_is_refused_by_its_keys_rule_never_replaced_by_the_default(spark, kwargs, message):
    with pytest.raises(UsageError) as e:
        JobGate(spark, **kwargs)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_the_history_path_is_checked_when_the_gate_is_built_and_never_overwrites_a_users_file(spark, tmp_path):
    with pytest.raises(NotOursError, match=f"^JobGate's history {tmp_path} is a folder: give the path of a job "
                                           "history to write"):
        JobGate(spark, history=str(tmp_path))
    mine = tmp_path / "results.json"
    mine.write_text('{"rows": 3}')
    with pytest.raises(NotOursError, match=f"^JobGate's history {mine} exists and sparkrm did not write it"):
        JobGate(spark, history=str(mine))
    assert mine.read_text() == '{"rows": 3}'
    kept = tmp_path / "new" / "history.json"
    gate = JobGate(spark, history=str(kept))
    assert kept.parent.is_dir()  # created before any job, so the first job's history has a place to go
    with gate.job("count"):
        spark.sparkContext.parallelize(range(10), 2).count()
    assert JobHistory.load(kept).estimate("count").tasks == 2
