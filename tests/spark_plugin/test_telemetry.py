"""Telemetry on a real two-executor local-cluster: exact counts, cross-checked with Spark itself."""

import json
import logging
import urllib.request
from pathlib import Path

import pyarrow.compute as pc
import pytest

import spark_plugin
from spark_plugin.telemetry_reader import RECORD_TYPES, Telemetry, read_telemetry
from tests.helpers import eventually

pytestmark = pytest.mark.spark

SPARK_SESSION = dict(
    master="local-cluster[2,1,1024]",
    features=["telemetry"],
    conf={"spark.sparkrm.telemetry.dir": "{session_dir}/telemetry",
          "spark.sparkrm.telemetry.bufferRecords": "1000",
          "spark.ui.enabled": "true"},
)
MAPS, REDUCERS, KEYS = 6, 4, 100


@pytest.fixture(scope="module")
def tm(spark):
    return spark_plugin.telemetry(spark)


@pytest.fixture(scope="module")
def shuffle_job(spark, tm):
    """reduceByKey with every key in every map partition: each reducer reads all 6 map outputs."""
    sc = spark.sparkContext
    mark = tm.mark()
    sc.setJobGroup("shuffle-job", "6 maps x 4 reducers")
    result = dict(sc.parallelize(range(60_000), MAPS).map(lambda x: (x % KEYS, 1))
                  .reduceByKey(lambda a, b: a + b, REDUCERS).collect())
    sc.setJobGroup("other", "after the shuffle job")
    assert result == {k: 600 for k in range(KEYS)}
    return mark, tm.records(since=mark)


def test_every_task_of_the_shuffle_job_is_recorded_with_exact_block_counts(shuffle_job):
    _, records = shuffle_job
    tasks = records["task"].to_pylist()
    maps = [t for t in tasks if t["taskType"] == "ShuffleMapTask"]
    reduces = [t for t in tasks if t["taskType"] == "ResultTask"]
    assert sorted(t["partition"] for t in maps) == list(range(MAPS))
    assert sorted(t["partition"] for t in reduces) == list(range(REDUCERS))
    assert all(t["status"] == "SUCCESS" and t["jobGroup"] == "shuffle-job" for t in tasks)
    for t in reduces:
        assert t["shuffleLocalBlocks"] + t["shuffleRemoteBlocks"] == MAPS
    assert sum(t["shuffleRemoteBlocks"] for t in reduces) > 0  # two executor JVMs: real fetches
    assert sum(t["shuffleLocalBlocks"] for t in reduces) > 0
    written = sum(t["shuffleWriteBytes"] for t in maps)
    assert written == sum(t["shuffleLocalBytes"] + t["shuffleRemoteBytes"] for t in reduces) > 0
    # PySpark shuffles pickled batches, so JVM record counts are batches: written == read.
    assert sum(t["shuffleWriteRecords"] for t in maps) == sum(t["shuffleRecordsRead"] for t in reduces) > 0


def test_task_metrics_equal_sparks_own_status_store(spark, shuffle_job):
    """Compare every task with Spark's REST API, an independent consumer of the same events."""
    _, records = shuffle_job
    sc = spark.sparkContext
    ours = {t["taskId"]: t for t in records["task"].to_pylist()}
    theirs = {}
    for stage_id in {t["stageId"] for t in ours.values()}:
        url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/stages/{stage_id}/0/taskList?length=1000"
        theirs.update({t["taskId"]: t for t in json.load(urllib.request.urlopen(url, timeout=30))})
    assert set(theirs) == set(ours)
    for task_id, t in ours.items():
        m = theirs[task_id]["taskMetrics"]
        assert (t["executorId"], t["attempt"]) == (theirs[task_id]["executorId"], theirs[task_id]["attempt"])
        assert t["runTimeMs"] == m["executorRunTime"] and t["cpuTimeNs"] == m["executorCpuTime"]
        assert t["shuffleLocalBlocks"] == m["shuffleReadMetrics"]["localBlocksFetched"]
        assert t["shuffleRemoteBlocks"] == m["shuffleReadMetrics"]["remoteBlocksFetched"]
        assert t["shuffleRemoteBytes"] == m["shuffleReadMetrics"]["remoteBytesRead"]
        assert t["shuffleFetchWaitMs"] == m["shuffleReadMetrics"]["fetchWaitTime"]
        assert t["shuffleWriteBytes"] == m["shuffleWriteMetrics"]["bytesWritten"]


def test_stage_and_job_totals_are_the_sums_of_their_tasks(shuffle_job):
    _, records = shuffle_job
    tasks, stages, jobs = records["task"], records["stage"], records["job"]
    assert stages.num_rows == 2 and jobs.num_rows == 1
    for stage in stages.to_pylist():
        mine = tasks.filter(pc.equal(tasks["stageId"], stage["stageId"]))
        assert stage["tasks"] == mine.num_rows == stage["numTasks"]
        for column in ("shuffleWriteBytes", "shuffleRemoteBlocks", "runTimeMs", "cpuTimeNs"):
            assert stage[column] == pc.sum(mine[column]).as_py()
        assert stage["status"] == "succeeded" and stage["completionTime"] >= stage["submissionTime"]
    (job,) = jobs.to_pylist()
    assert job["jobGroup"] == "shuffle-job" and job["description"] == "6 maps x 4 reducers"
    assert job["status"] == "succeeded" and sorted(job["stageIds"]) == sorted(stages["stageId"].to_pylist())
    assert job["tasks"] == MAPS + REDUCERS
    assert job["shuffleWriteBytes"] == pc.sum(tasks["shuffleWriteBytes"]).as_py()
    map_stage = [s for s in stages.to_pylist() if s["shuffleId"] is not None]
    assert len(map_stage) == 1 and map_stage[0]["numTasks"] == MAPS


def test_executors_are_added_and_register_their_process_over_rpc(tm):
    executors = tm.executors().to_pylist()
    added = {e["executorId"]: e for e in executors if e["event"] == "added"}
    registered = {e["executorId"]: e for e in executors if e["event"] == "registered"}
    assert set(added) == set(registered) == {"0", "1"}
    assert all(e["cores"] == 1 and e["host"] for e in added.values())
    for e in registered.values():
        cmdline = Path(f"/proc/{e['pid']}/cmdline").read_bytes()
        assert b"CoarseGrainedExecutorBackend" in cmdline


def test_a_failed_attempt_and_its_retry_are_both_recorded(spark, tm, session_dir):
    flag = session_dir / "failed-once"

    def fail_first_attempt(index, rows):
        if index == 1 and not flag.exists():
            flag.touch()
            raise RuntimeError("injected failure")
        return rows

    mark = tm.mark()
    assert spark.sparkContext.parallelize(range(10), 2).mapPartitionsWithIndex(fail_first_attempt).sum() == 45
    tasks = tm.tasks(since=mark).to_pylist()
    failed = [t for t in tasks if t["status"] == "FAILED"]
    assert len(failed) == 1 and "injected failure" in failed[0]["failureReason"]
    retry = [t for t in tasks if t["partition"] == 1 and t["status"] == "SUCCESS"]
    assert len(retry) == 1 and retry[0]["attempt"] == 1
    (job,) = tm.jobs(since=mark).to_pylist()
    assert job["failedTasks"] == 1 and job["tasks"] == 3


def test_since_mark_excludes_earlier_records(spark, tm, shuffle_job):
    mark = tm.mark()
    assert tm.tasks(since=mark).num_rows == 0
    spark.range(0, 100, numPartitions=3).count()
    later = tm.tasks(since=mark)
    assert later.num_rows >= 3 and pc.min(later["seq"]).as_py() > mark


def test_small_batches_read_the_same_records(spark, tm, shuffle_job):
    mark, records = shuffle_job
    small = Telemetry(spark, batch_size=3).records(since=mark)
    for rtype in ("task", "stage", "job"):
        assert small[rtype].slice(0, records[rtype].num_rows).equals(records[rtype])


def test_the_file_holds_the_same_records_while_running(tm, session_dir, shuffle_job):
    mark, live = shuffle_job
    (path,) = (session_dir / "telemetry").glob("*.telemetry.jsonl.inprogress")
    from_file = eventually(lambda: _after(read_telemetry(path), mark, live))
    for rtype in ("task", "stage", "job"):
        assert from_file[rtype].equals(live[rtype])


def _after(tables, mark, live):
    """The file's records after ``mark`` and up to the live ones, once the file has them all."""
    last = max(pc.max(live[t]["seq"]).as_py() for t in ("task", "stage", "job"))
    out = {t: v.filter(pc.and_(pc.greater(v["seq"], mark), pc.less_equal(v["seq"], last)))
           for t, v in tables.items()}
    return out if all(out[t].num_rows == live[t].num_rows for t in ("task", "stage", "job")) else None


def test_readme_documents_every_record_field(tm):
    readme = (Path(__file__).resolve().parents[2] / "docs" / "telemetry.md").read_text()
    for rtype in RECORD_TYPES:
        for field in tm.schemas_[rtype].names:
            assert f"`{field}`" in readme, f"docs/telemetry.md lacks {rtype}.{field}"


def test_records_dropped_from_memory_are_reported_and_kept_on_disk(spark, tm, session_dir, caplog):
    mark = tm.mark()
    # 1,200 JVM-only tasks (a Python worker per task would take a minute here).
    assert spark.range(0, 1200, 1, numPartitions=1200).selectExpr("sum(id)").first()[0] == 719400
    with caplog.at_level(logging.WARNING, logger="spark_plugin.telemetry_reader"):
        kept = tm.tasks(since=0)
    assert kept.num_rows < 1000
    assert "were dropped from memory before they were read" in caplog.text
    (path,) = (session_dir / "telemetry").glob("*.inprogress")
    tasks, stages = eventually(lambda: _tasks_and_stages_after(path, mark))
    assert tasks.num_rows == pc.sum(stages["tasks"]).as_py() >= 1200


def _tasks_and_stages_after(path, mark):
    """Task and stage records after ``mark`` in the file, once its job record is there."""
    after = {t: v.filter(pc.greater(v["seq"], mark)) for t, v in read_telemetry(path).items()}
    return (after["task"], after["stage"]) if after["job"].num_rows else None
