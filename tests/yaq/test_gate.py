"""Yaq's gate on a real driver: release order, work learned from telemetry, Pigeon's pools, properties."""

import threading

import pytest

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


def test_a_bad_setting_is_refused_naming_the_key(spark):
    with pytest.raises(ValueError, match=r"policy must be one of \['srjf', 'lrtf', 'fifo'\]. Got 'shortest'"):
        JobGate(spark, policy="shortest")
