"""Riffle with Spark's external shuffle service: merged files outlive their executors and go with their shuffle.

Dynamic allocation releases idle executors; the shuffle service, started in the driver's JVM as a worker
would start it, keeps serving their files, merged ones included. Both executors share one worker (one host).
"""

import pytest

import spark_plugin
from benchmarks.common import stop_and_clean
from spark_plugin.standalone import free_port
from tests.helpers import eventually, executor_ids
from tests.conftest import ini_spark_options
from tests.shuffle_merge.conftest import shuffle_files
from tests.shuffle_merge.elastic import PROMPT_REMOVAL, RIFFLE_CONF, exact, merged_shuffle, read_twice

pytestmark = pytest.mark.spark

FEATURES = ["telemetry", "riffle"]
CONF = {**RIFFLE_CONF, **PROMPT_REMOVAL, "spark.executor.cores": "1", "spark.executor.memory": "640m",
        "spark.shuffle.service.enabled": "true", "spark.shuffle.service.removeShuffle": "true",
        "spark.dynamicAllocation.enabled": "true", "spark.dynamicAllocation.executorIdleTimeout": "1s",
        "spark.dynamicAllocation.initialExecutors": "2", "spark.dynamicAllocation.minExecutors": "0",
        "spark.dynamicAllocation.maxExecutors": "2"}


def start_shuffle_service(conf: dict) -> None:
    """Start the driver's JVM with the plugin's class path, and an external shuffle service in it."""
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized(conf=SparkConf(loadDefaults=False).setAll(
        spark_plugin.plugin_conf(FEATURES, conf).items()))
    jvm = SparkContext._jvm
    service_conf = jvm.org.apache.spark.SparkConf(False)
    for key in ("spark.shuffle.service.enabled", "spark.shuffle.service.port"):
        service_conf.set(key, conf[key])
    keys = getattr(getattr(jvm.org.apache.spark.internal.config, "package$"), "MODULE$")
    security = jvm.org.apache.spark.SecurityManager(service_conf, jvm.scala.Option.empty(), keys.AUTH_SECRET_FILE())
    jvm.org.apache.spark.deploy.ExternalShuffleService(service_conf, security).start()


@pytest.fixture(scope="module")
def spark(request, session_dir):
    conf = {**ini_spark_options(request.config), **CONF, "spark.shuffle.service.port": str(free_port()),
            "spark.local.dir": str(session_dir / "local")}
    start_shuffle_service(conf)
    session = spark_plugin.session("local-cluster[1,2,1536]", FEATURES, app_name=__name__, conf=conf)
    app_id = session.sparkContext.applicationId
    yield session
    stop_and_clean(session, app_id)


def released(spark):
    """Every executor is gone, from the scheduler and from the block manager master (which lists the driver
    alone): a shuffle cleaned before the master has dropped an executor is sent to its dead block manager, not
    to the shuffle service, and that executor's files stay (a race in Spark seen once under CI load)."""
    eventually(lambda: not executor_ids(spark), timeout=90)
    eventually(lambda: spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() == 1, timeout=90)


def test_merges_of_released_executors_are_read_from_the_shuffle_service(spark):
    second = read_twice(spark, 89, lambda tm, first: released(spark))
    assert not [t for t in second["task"].to_pylist() if t["taskType"] == "ShuffleMapTask"]  # nothing recomputed
    reads = second["shuffle_read"].to_pylist()
    seen = [(r["mergedBlocks"], r["groupsRejected"], r["fallbacks"]) for r in reads]
    assert seen and all(s == (4, 0, 0) for s in seen), seen  # (merged blocks, rejected groups, fallbacks) per read


def test_merged_files_of_released_executors_are_deleted_with_their_shuffle(spark, session_dir):
    tm = spark_plugin.telemetry(spark)
    mark = tm.mark()
    assert sorted(merged_shuffle(spark, 97).collect()) == exact(97)
    records = tm.records(since=mark)
    assert any(m["status"] == "committed" for m in records["merge"].to_pylist())
    shuffle_id = next(s["shuffleId"] for s in records["stage"].to_pylist() if s["shuffleId"] is not None)
    released(spark)
    local = session_dir / "local"
    assert shuffle_files(local, merged=True, shuffle_id=shuffle_id)  # kept for the shuffle service to serve
    # What Spark's ContextCleaner does once the shuffle's RDD is garbage collected.
    spark.sparkContext._jsc.sc().cleaner().get().doCleanupShuffle(shuffle_id, True)
    eventually(lambda: not shuffle_files(local, merged=True, shuffle_id=shuffle_id), timeout=30)
    eventually(lambda: not shuffle_files(local, merged=False, shuffle_id=shuffle_id), timeout=30)  # Spark's own
