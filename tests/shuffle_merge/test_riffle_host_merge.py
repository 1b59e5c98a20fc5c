"""Host-level merging on four executors of one host (``local-cluster[4,1,...]``).

Every executor's outputs queue together, a merge runs on one of the executors that wrote its inputs
and reads its neighbours' files from their local directories. Checked here: results equal vanilla
Spark's, reads per reducer follow the host model (not the per-executor one), the ``executor`` scope
still keeps executors apart, and a neighbour lost after its outputs were merged elsewhere never
serves stale data. The merges spanning executors and the lost neighbour are seen in one shuffle
(:func:`first_read`).
"""

import math
import os
import signal
from collections import Counter
from operator import add

import pytest

import spark_plugin
from shuffle_merge import job_settings
from tests.helpers import eventually, executor_ids, recorded
from tests.shuffle_merge.workloads import WORKLOADS

pytestmark = pytest.mark.spark

EXECUTORS = 4
FAN_IN = 3
SPARK_SESSION = dict(
    master=f"local-cluster[{EXECUTORS},1,768]",
    features=["telemetry", "riffle"],
    conf={"spark.executor.memory": "640m", "spark.riffle.merge.fanIn": str(FAN_IN),
          "spark.riffle.bestEffort.fraction": "1.0",
          "spark.local.dir": "{session_dir}/local", "spark.shuffle.io.retryWait": "200ms"},
)


@pytest.fixture(scope="module")
def tm(spark):
    eventually(lambda: len(executor_ids(spark)) == EXECUTORS, timeout=90)
    return spark_plugin.telemetry(spark)


def map_tasks(records) -> list[dict]:
    return [t for t in records["task"].to_pylist() if t["taskType"] == "ShuffleMapTask"]


def writers(records) -> dict[int, str]:
    """The executor that wrote each map index (the successful attempt)."""
    return {t["partition"]: t["executorId"] for t in map_tasks(records) if t["status"] == "SUCCESS"}


def small_shuffle(sc, seed):
    return sc.parallelize(range(48_000), 16).map(lambda x: ((x * seed) % 211, x)).reduceByKey(add, 4)


@pytest.fixture(scope="module")
def first_read(spark, tm):
    """A shuffle merged across executors, read once: (RDD, sorted result, records). The RDD is kept, so its map
    outputs stay for the test that reads it again."""
    rdd = small_shuffle(spark.sparkContext, 17)
    result, records = recorded(tm, lambda: sorted(rdd.collect()))
    return rdd, result, records


#: The other four workloads run under the same checks on two executors in ``test_riffle_cluster``, which says why
#: the two halves cover every shuffle path.
@pytest.mark.parametrize("name", ["rdd_reduce_by_key", "rdd_sort_by_key", "df_join", "df_repartition"])
def test_host_merges_give_vanilla_results(spark, tm, vanilla_results, name):
    result, records = recorded(tm, lambda: WORKLOADS[name](spark))
    assert result == vanilla_results[name]
    reads = records["shuffle_read"].to_pylist()
    assert sum(r["mergedBlocks"] for r in reads) > 0 and sum(r["fallbacks"] for r in reads) == 0
    merges = records["merge"].to_pylist()
    assert merges and all(m["scope"] == "host" and m["status"] == "committed" for m in merges)
    tasks = records["task"].to_pylist()
    assert all(t["status"] == "SUCCESS" and t["stageAttempt"] == 0 for t in tasks)  # nothing failed or retried


def test_merges_span_executors_and_each_runs_on_one_of_its_writers(first_read):
    _, counts, records = first_read
    assert len(counts) == 211
    wrote = writers(records)
    merges = records["merge"].to_pylist()
    assert any(len({wrote[i] for i in m["mapIndexes"]}) > 1 for m in merges)  # neighbours' files were read
    for m in merges:
        assert m["executorId"] in {wrote[i] for i in m["mapIndexes"]}


def test_reads_per_reducer_follow_the_host_model_not_the_executor_one(spark, tm):
    with job_settings(spark, fan_in=8):  # more than any one executor's share of the 16 maps
        _, records = recorded(tm, lambda: small_shuffle(spark.sparkContext, 11).count())
    maps = map_tasks(records)
    per_host = sum(math.ceil(m / 8) for m in Counter(t["host"] for t in maps).values())
    per_executor = sum(math.ceil(m / 8) for m in Counter(t["executorId"] for t in maps).values())
    assert per_host == 2 <= per_executor  # per executor: at least one block from each executor that ran maps
    for r in records["shuffle_read"].to_pylist():
        assert r["mergedBlocks"] + r["originalBlocks"] == per_host
        assert r["coveredBlocks"] + r["originalBlocks"] == r["expectedBlocks"] == len(maps)


def test_executor_scope_keeps_each_executor_apart(spark, tm):
    with job_settings(spark, scope="executor"):
        _, records = recorded(tm, lambda: small_shuffle(spark.sparkContext, 13).count())
    wrote = writers(records)
    merges = records["merge"].to_pylist()
    assert merges and all(m["scope"] == "executor" for m in merges)
    assert all({wrote[i] for i in m["mapIndexes"]} == {m["executorId"]} for m in merges)
    per_executor = sum(math.ceil(m / FAN_IN) for m in Counter(wrote.values()).values())
    assert all(r["mergedBlocks"] + r["originalBlocks"] == per_executor for r in records["shuffle_read"].to_pylist())


def test_a_neighbour_lost_after_its_outputs_were_merged_elsewhere_serves_nothing_stale(spark, tm, first_read):
    """Its outputs are recomputed under new map ids, so the merges holding the old ones are rejected."""
    rdd, first, records = first_read
    wrote = writers(records)
    host_merges = [m for m in records["merge"].to_pylist() if len({wrote[i] for i in m["mapIndexes"]}) > 1]
    assert host_merges
    victim = next(wrote[i] for i in host_merges[0]["mapIndexes"] if wrote[i] != host_merges[0]["executorId"])
    pid = next(e["pid"] for e in tm.executors().to_pylist() if e["executorId"] == victim and e["pid"])
    os.kill(pid, signal.SIGKILL)
    eventually(lambda: victim not in executor_ids(spark), timeout=60)
    second, records = recorded(tm, lambda: sorted(rdd.collect()))
    assert second == first
    recomputed = [t for t in map_tasks(records) if t["status"] == "SUCCESS"]
    assert len(recomputed) >= sum(ex == victim for ex in wrote.values())  # the victim's outputs, at least
    assert sum(r["groupsRejected"] for r in records["shuffle_read"].to_pylist()) > 0
