"""Runs read from the telemetry files of real applications at one and two executors."""

import pytest

import spark_plugin
from spark_plugin.advisor import load_runs, recommend
from benchmarks.common import stop_and_clean

pytestmark = pytest.mark.spark


def run_job(master: str, folder) -> None:
    spark = spark_plugin.session(master, ["telemetry"], app_name="advisor-test",
                                 conf={"spark.sparkrm.telemetry.dir": str(folder)})
    app_id = spark.sparkContext.applicationId
    try:
        sc = spark.sparkContext
        sc.setJobGroup("squares", "sum of squares")
        assert sc.parallelize(range(1000), 8).map(lambda x: x * x).sum() == sum(x * x for x in range(1000))
        sc.setJobGroup("other", "not modelled")
        sc.parallelize(range(10), 2).count()
    finally:
        stop_and_clean(spark, app_id)


def test_each_application_is_one_run_of_the_job_group(tmp_path):
    for n in (1, 2):
        run_job(f"local-cluster[{n},1,1024]", tmp_path / str(n))
    files = sorted(tmp_path.glob("*/*.telemetry.jsonl"))
    runs = load_runs(files, job="squares")
    assert [(r.slots, r.tasks, r.stage_tasks) for r in runs] == [(1, 8, (8,)), (2, 8, (8,))]
    assert all(r.wall_s > 0 for r in runs)
    advice = recommend(runs)
    assert advice.holdout_error == {"usba": None, "ipso": None, "waves": None} and advice.model == "ipso"
