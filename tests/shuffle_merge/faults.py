"""Checks shared by the Riffle fault modules: results stay right, Spark never retries."""

import pyarrow.compute as pc

from tests.shuffle_merge.workloads import WORKLOADS

#: A cheap RDD workload and a DataFrame one: both serializer paths, with and without AQE batching.
FAULT_WORKLOADS = ("rdd_reduce_by_key", "df_group_by")


def run_and_check(spark, tm, vanilla_results, name):
    """Run a workload, check it against vanilla Spark and that no task or stage was retried."""
    mark = tm.mark()
    assert WORKLOADS[name](spark) == vanilla_results[name]
    records = tm.records(since=mark)
    tasks = records["task"]
    assert pc.all(pc.equal(tasks["status"], "SUCCESS")).as_py()
    assert pc.max(tasks["stageAttempt"]).as_py() == 0
    return records
