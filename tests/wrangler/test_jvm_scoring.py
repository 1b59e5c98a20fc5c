"""A model exported to JSON and scored in the driver JVM: the scores Python computes, and holds from --conf alone.

The session is started with ``spark.wrangler.model.path`` naming a JSON model and nothing else: the JVM
installs it, scores the executors' samples and holds; Python only reads the decisions back. The model here
is written by hand (it flags executor 1 through its own per-node model), so what it does is known;
executor 1 is really slow (its tasks sleep 4x longer), so the feedback guard has no reason to refute its holds.
"""

import tempfile
from pathlib import Path

import numpy as np
import pytest

import spark_plugin
from spark_plugin.wrangler import StragglerPredictor, build_dataset, is_flagged, running
from spark_plugin.wrangler._jvm import JvmDecisions

from .jobs import executor_pid, flag_model, in_background, launches_inside, steady_jobs
from .synthetic import telemetry

pytestmark = pytest.mark.spark

INTERVAL_MS, CAP_MS = 500, 3000
MODEL = flag_model(Path(tempfile.mkdtemp(prefix="sparkrm-wrangler-")) / "flag-1.json", "1")
SPARK_SESSION = dict(
    master="local-cluster[3,1,1024]",
    features=["wrangler"],
    conf={"spark.wrangler.interval": f"{INTERVAL_MS}ms", "spark.wrangler.hold.maxDuration": f"{CAP_MS}ms",
          "spark.wrangler.model.path": str(MODEL), "spark.sparkrm.telemetry.dir": "{session_dir}/telemetry",
          "spark.locality.wait": "0"},
)


def java_doubles(gateway, values):
    array = gateway.new_array(gateway.jvm.double, len(values))
    for i, v in enumerate(values):
        array[i] = float(v)
    return array


def test_the_jvm_scores_a_trained_model_as_python_does_and_flags_by_the_rule(spark, tmp_path):
    tasks, nodes = telemetry(seed=3, seconds=400)
    data = build_dataset(tasks, nodes, max_age_ms=2000)
    predictor = StragglerPredictor(min_node_tasks=50).fit(data)
    assert list(predictor.node_models_) == ["2"]  # "2" by its own model, the others by the multi-task one
    path = predictor.save(tmp_path / "model.json")
    gateway = spark.sparkContext._gateway
    jvm_model = gateway.jvm.dev.sparkrm.wrangler.WranglerModel.load(str(path))
    rng = np.random.default_rng(0)
    rows = data.X[rng.choice(len(data), 40, replace=False)]
    rows[0, 1] = np.nan  # a counter missing from a sample
    rows[1] *= 5  # beyond the training range: clipped
    names = ["0", "1", "2", "7"] * 10  # "7": never seen in training
    workloads = ["default"] * 30 + ["other"] * 10
    scores, confidences = predictor.predict(rows, names, workloads)
    jvm = [list(jvm_model.predict(java_doubles(gateway, row), name, workload))
           for row, name, workload in zip(rows, names, workloads)]
    np.testing.assert_allclose([s for s, _ in jvm], scores, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose([c for _, c in jvm], confidences, rtol=1e-9, atol=1e-12)
    choose = gateway.jvm.dev.sparkrm.wrangler.JvmDecisions.choose
    for p in (0.0, 0.3, 0.7, 0.95):
        for start in range(0, 40, 4):
            batch = {str(i): (float(scores[i]), float(confidences[i])) for i in range(start, start + 4)}
            java_map = gateway.jvm.java.util.HashMap()
            for ex, (s, c) in batch.items():
                java_map.put(ex, java_doubles(gateway, [s, c]))
            flagged = sorted((ex for ex, (s, c) in batch.items() if is_flagged(s, c, p)), key=lambda ex: -batch[ex][1])
            assert sorted(choose(java_map, p, 4)) == sorted(flagged[:3])


def test_spark_submit_conf_alone_holds_the_slow_executor(spark):
    assert JvmDecisions(spark).has_model() and running(spark).predictor_ is None  # the JVM installed it itself
    tm = spark_plugin.telemetry(spark)
    mark = tm.mark()
    job, out = in_background(lambda: steady_jobs(spark, 8, slow_pid=executor_pid(spark, "1")))
    job.join()
    assert out["value"] and set(out["value"]) == {sum(x * x for x in range(30))}
    records = tm.records(since=mark)
    holds = records["wrangler_hold"].to_pylist()
    assert holds and {h["executorId"] for h in holds} == {"1"}
    assert {(d["executorId"], d["why"]) for d in running(spark).decisions_} == {("1", "model")}
    assert launches_inside(records["task"].to_pylist(), holds) == []


def test_an_unreadable_model_is_refused_naming_the_key_and_the_fix(spark, tmp_path):
    load = spark.sparkContext._jvm.dev.sparkrm.wrangler.WranglerModel.load
    with pytest.raises(Exception, match="spark.wrangler.model.path=.*missing.json: no such file. Write it with"):
        load(str(tmp_path / "missing.json"))
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(Exception, match="broken.json cannot be read as JSON"):
        load(str(tmp_path / "broken.json"))
    (tmp_path / "other.json").write_text("{}")
    with pytest.raises(Exception, match="other.json is not a valid Wrangler model: format is missing"):
        load(str(tmp_path / "other.json"))
