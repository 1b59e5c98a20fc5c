"""Holds priced against the task queue (``spark.wrangler.hold.waitAware``) on a real three-executor local-cluster.

The listener bus feeds the driver's ``TaskQueue`` the stages and tasks Spark really runs. A model flags
executor 1, whose tasks are not slow: between jobs nothing waits and the hold stands; once a job's tasks
queue, holding a third of the cluster would delay the last of them by more than the straggle a 1.3x task
costs, so the decisions stop holding it. The exact prices, for set queues at a set clock, are checked in
test_decisions.py.
"""

import tempfile
from pathlib import Path

import pytest

import spark_plugin
from spark_plugin.wrangler import running
from tests.helpers import eventually

from .jobs import flag_model, holds_only_session, in_background, launches_inside, steady_jobs

pytestmark = pytest.mark.spark

FLAG_ONE = flag_model(Path(tempfile.mkdtemp(prefix="sparkrm-wrangler-")) / "flag-1.json", "1")
SPARK_SESSION = holds_only_session("local-cluster[3,1,1024]", **{
    "spark.wrangler.model.path": str(FLAG_ONE), "spark.wrangler.hold.waitAware": "true",
    "spark.locality.wait": "0"})


def test_a_flagged_executor_is_held_while_nothing_waits_and_not_while_a_jobs_tasks_queue(spark):
    tm = spark_plugin.telemetry(spark)
    loop = eventually(lambda: running(spark))
    eventually(lambda: any(d["action"] == "held" for d in loop.decisions_))
    idle = loop.decisions_
    assert {(d["action"], d["delayMs"]) for d in idle} <= {("held", 0.0), ("renewed", 0.0)}
    mark = tm.mark()
    job, out = in_background(lambda: steady_jobs(spark, 4.0))
    job.join()
    assert out["value"] and set(out["value"]) == {sum(x * x for x in range(30))}
    during = loop.decisions_[len(idle):]
    priced = [d for d in during if d["action"] == "waits-longer"]
    assert priced and all(d["delayMs"] > d["avoidedMs"] > 0 for d in priced)
    records = tm.records(since=mark)
    holds = records["wrangler_hold"].to_pylist()
    assert "released" in {h["endReason"] for h in holds}
    assert launches_inside(records["task"].to_pylist(), holds) == []
    assert "1" in set(records["task"].column("executorId").to_pylist())  # not held, it ran the job's tasks too
