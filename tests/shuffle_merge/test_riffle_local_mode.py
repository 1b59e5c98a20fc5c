"""Riffle in local[N] mode: driver and executor share one JVM (and the driver's map-output tracker).

The merger's memory budget is tight here: one merge's buffers fill it, and each merge holds them
a while (an injected 2 s delay, far longer than the ~350 ms between two merges' issue times, even
on a busy machine), so merges must queue for memory; reducers wait for all of them (the wait limits are far
above what the queued merges take: a map stage of a few hundred ms with a 10x ratio once cut them off).
"""

import pyarrow.compute as pc
import pytest

import spark_plugin
from shuffle_merge import job_settings
from tests.shuffle_merge.faults import run_and_check

pytestmark = pytest.mark.spark

BUDGET = 1 << 20
SPARK_SESSION = dict(master="local[2]", features=["telemetry", "riffle"],
                     conf={"spark.riffle.merge.fanIn": "3", "spark.riffle.bestEffort.fraction": "1.0",
                           "spark.riffle.merger.threads": "2", "spark.riffle.merger.memoryBudget": str(BUDGET),
                           "spark.riffle.merger.readBufferBytes": "256k", "spark.riffle.merger.writeBufferBytes": "512k",
                           "spark.riffle.bestEffort.maxWaitRatio": "100",
                           "spark.riffle.bestEffort.timeout": "120s",
                           "spark.riffle.test.mergeDelay": "2s"})


#: Per workload, its job settings here. The DataFrame's twelve outputs go into one merge: each merge holds the
#: memory budget through its injected delay, so four would queue for 8 s; the queueing is checked on the RDD's.
JOB_SETTINGS = {"df_repartition": {"fan_in": 12}}


@pytest.fixture(scope="module")
def workload_records(spark, vanilla_results):
    """The telemetry records of a workload, run once (checked against vanilla Spark, nothing retried) for every
    test that reads them: each run here takes seconds, its merges queueing for memory."""
    runs = {}

    def run(name):
        if name not in runs:
            with job_settings(spark, **JOB_SETTINGS.get(name, {})):
                runs[name] = run_and_check(spark, spark_plugin.telemetry(spark), vanilla_results, name)
        return runs[name]

    return run


#: An RDD and a DataFrame workload: the two shuffle paths (every PySpark RDD operator shuffles pickled pairs
#: through the same JVM path, so rdd_group_by_key, once run here too, took the same one as rdd_reduce_by_key).
@pytest.mark.parametrize("name", ["rdd_reduce_by_key", "df_repartition"])
def test_local_mode_merges_and_matches_vanilla(workload_records, name):
    reads = workload_records(name)["shuffle_read"]
    assert pc.sum(reads["mergedBlocks"]).as_py() > 0
    assert pc.sum(reads["groupsRejected"]).as_py() == 0


def test_merges_queue_for_memory_and_never_exceed_the_budget(workload_records):
    merges = [m for m in workload_records("rdd_reduce_by_key")["merge"].to_pylist() if m["status"] == "committed"]
    assert len(merges) >= 2
    # Read buffers shrink so that one merge fits: 3 x (1 MiB - 512 KiB) / 3 + 512 KiB = the budget.
    assert all(m["bufferBytes"] <= BUDGET for m in merges)
    assert max(m["peakBufferBytes"] for m in merges) <= BUDGET
    assert any(m["memoryWaits"] == 1 for m in merges)  # a merge queued for another's buffers
