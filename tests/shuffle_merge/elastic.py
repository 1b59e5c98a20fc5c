"""Shared by the elastic-executor modules: read a merged shuffle, take executors away, read it again."""

from operator import add

import spark_plugin
from tests.helpers import eventually, executor_ids

ROWS = 48_000
#: Every output merged, three per merge, and reducers wait for every merge however loaded the machine (the
#: default deadline, one map stage's duration, cancelled a merge in a CI run with three test workers); lost
#: remote files fail fast.
RIFFLE_CONF = {"spark.riffle.merge.fanIn": "3", "spark.riffle.bestEffort.fraction": "1.0",
               "spark.riffle.bestEffort.maxWaitRatio": "100", "spark.riffle.bestEffort.timeout": "60s",
               "spark.shuffle.io.retryWait": "200ms"}
#: An executor whose connection closed leaves the driver at once. Spark's default waits 5 s for the cluster manager
#: to report the executor's exit code first; for an executor killed on request (released by dynamic allocation)
#: that report never comes, the master having dropped the executor already, so each release waited the full 5 s.
PROMPT_REMOVAL = {"spark.standalone.executorRemoveDelayOnDisconnection": "100ms"}


def exact(keys):
    """The sum of the values of each key, computed in Python."""
    counts = {}
    for x in range(ROWS):
        counts[x % keys] = counts.get(x % keys, 0) + x
    return sorted(counts.items())


def merged_shuffle(spark, keys):
    """Twelve map outputs, four reducers: four merges of three outputs each."""
    return spark.sparkContext.parallelize(range(ROWS), 12).map(lambda x: (x % keys, x)).reduceByKey(add, 4)


def read_twice(spark, keys, between):
    """Read a merged shuffle, run ``between`` (given the first read's records), read it again; the second
    read's records."""
    tm = spark_plugin.telemetry(spark)
    eventually(lambda: len(executor_ids(spark)) == 2, timeout=90)
    rdd = merged_shuffle(spark, keys)
    mark = tm.mark()
    assert sorted(rdd.collect()) == exact(keys)
    first = tm.records(since=mark)
    statuses = [m["status"] for m in first["merge"].to_pylist()]
    assert statuses and all(s == "committed" for s in statuses), statuses
    between(tm, first)
    mark = tm.mark()
    assert sorted(rdd.collect()) == exact(keys)
    return tm.records(since=mark)
