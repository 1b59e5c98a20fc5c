"""Offline training from a recorded telemetry file, and Wrangler's configuration errors."""

import json

import numpy as np
import pandas as pd
import pytest

from spark_plugin import ConfigError
from spark_plugin.activation import plugin_conf
from spark_plugin.wrangler.__main__ import main

from .synthetic import telemetry


def write_telemetry(path, tasks: pd.DataFrame, nodes: pd.DataFrame) -> None:
    """A telemetry file as the driver writes it: the schema line, then one JSON record per line."""
    kinds = {"int64": "int", "float64": "double", "object": "string", "str": "string"}
    schemas = {"task": [[c, kinds[str(t)]] for c, t in tasks.dtypes.items()],
               "node": [[c, kinds[str(t)]] for c, t in nodes.drop(columns=["seq", "type"]).dtypes.items()],
               **{rtype: [["jobId", "int"]] for rtype in ("stage", "job", "executor")}}  # none recorded
    compact = dict(separators=(",", ":"))  # the reader matches the driver's compact record prefix
    lines = [json.dumps({"seq": 0, "type": "schema", "schemas": schemas}, **compact)]
    seq = 0
    for rtype, table in (("node", nodes.drop(columns=["seq", "type"])), ("task", tasks)):
        for row in table.to_dict("records"):
            seq += 1
            lines.append(json.dumps({"seq": seq, "type": rtype, **row}, **compact))
    path.write_text("\n".join(lines) + "\n")


def test_train_writes_a_model_and_evaluate_scores_it_on_another_recording(tmp_path, capsys):
    write_telemetry(tmp_path / "warmup.telemetry.jsonl", *telemetry(seed=1, seconds=600))
    write_telemetry(tmp_path / "later.telemetry.jsonl", *telemetry(seed=2, seconds=300))
    assert main(["train", str(tmp_path / "warmup.telemetry.jsonl"), "--out", str(tmp_path / "m.joblib"),
                 "--min-node-tasks", "50"]) == 0
    trained = json.loads(capsys.readouterr().out)
    assert trained["node_models"] == ["2"] and trained["rows"] > 1000 and trained["stragglers"] > 100
    assert main(["evaluate", str(tmp_path / "m.joblib"), str(tmp_path / "later.telemetry.jsonl")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["after_threshold"]["tpr"] >= 0.9 and report["after_threshold"]["fpr"] <= 0.05
    assert main(["choose", str(tmp_path / "m.joblib"), str(tmp_path / "later.telemetry.jsonl")]) == 0
    choice = json.loads(capsys.readouterr().out)
    low, high = choice["per_node"]["2"]["range"]
    assert list(choice["per_node"]) == ["2"]  # the quiet executors never straggle: nothing to vote with
    assert low <= choice["confidence"] <= high and choice["conf"] == f"spark.wrangler.confidence={choice['confidence']:g}"
    assert choice["per_node"]["2"]["balanced_accuracy"] >= 0.9


def test_a_model_is_written_as_json_for_the_jvm_directly_or_by_export(tmp_path, capsys):
    write_telemetry(tmp_path / "run.telemetry.jsonl", *telemetry(seed=1, seconds=300))
    assert main(["train", str(tmp_path / "run.telemetry.jsonl"), "--out", str(tmp_path / "m.json")]) == 0
    direct = json.loads((tmp_path / "m.json").read_text())
    assert direct["format"] == "sparkrm-wrangler-model" and "cgroupThrottledPct" in direct["features"]
    assert main(["train", str(tmp_path / "run.telemetry.jsonl"), "--out", str(tmp_path / "m.joblib")]) == 0
    assert main(["export", str(tmp_path / "m.joblib"), "--out", str(tmp_path / "e.json")]) == 0
    assert json.loads((tmp_path / "e.json").read_text()) == direct  # same rows, same seed: the same model
    assert main(["export", str(tmp_path / "m.joblib"), "--out", str(tmp_path / "e.bin")]) == 2
    assert main(["evaluate", str(tmp_path / "m.json"), str(tmp_path / "run.telemetry.jsonl")]) == 2
    assert "is a JSON model, which the driver JVM scores" in capsys.readouterr().err


def test_a_recording_without_node_samples_is_refused_with_the_fix(tmp_path, capsys):
    tasks, _ = telemetry(seconds=30)
    path = tmp_path / "plain.telemetry.jsonl"
    schemas = {rtype: [["jobId", "int"]] for rtype in ("task", "stage", "job", "executor")}
    path.write_text(json.dumps({"seq": 0, "type": "schema", "schemas": schemas}) + "\n")
    assert main(["train", str(path), "--out", str(tmp_path / "m.joblib")]) == 2
    assert "holds no node samples. Record it with the wrangler feature on" in capsys.readouterr().err


def test_a_recording_without_stragglers_is_refused_and_a_chance_model_is_warned_about(tmp_path, capsys):
    quiet = tmp_path / "quiet.telemetry.jsonl"
    write_telemetry(quiet, *telemetry(seconds=300, slowdown=1.0))  # nobody is ever slow
    assert main(["train", str(quiet), "--out", str(tmp_path / "m.joblib")]) == 2
    err = capsys.readouterr().err
    assert "cannot train on" in err and "stragglers; it needs at least 3 stragglers" in err and "--beta" in err
    tasks, nodes = telemetry(seed=4, seconds=600, slowdown=1.0)
    slow = np.random.default_rng(0).random(len(tasks)) < 0.15  # stragglers at random: nothing foretells them
    tasks.loc[slow, "durationMs"] *= 3
    shuffled = tmp_path / "random.telemetry.jsonl"
    write_telemetry(shuffled, tasks, nodes)
    assert main(["train", str(shuffled), "--out", str(tmp_path / "m.joblib")]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["calibration_auc"] < 0.6 and "no better than chance" in err


@pytest.mark.parametrize("key, value, message", [
    ("spark.wrangler.mode", "sometimes", "spark.wrangler.mode must be one of 'hold', 'hint'. Got 'sometimes'"),
    ("spark.wrangler.confidence", "1.0", r"spark.wrangler.confidence must be a number in \[0, 1\). Got '1.0'"),
    ("spark.wrangler.interval", "10", r"spark.wrangler.interval must be a duration in \[50ms, 10min\]. Got '10'"),
    ("spark.wrangler.beta", "1", r"spark.wrangler.beta must be a number in \(1, 10\]. Got '1'"),
    ("spark.wrangler.holdCap", "3s", "spark.wrangler.holdCap is not a sparkrm configuration key"),
])
def test_bad_wrangler_settings_name_the_key_and_the_accepted_values(key, value, message):
    with pytest.raises(ConfigError, match=message):
        plugin_conf(["wrangler"], {key: value})


def test_the_wrangler_feature_switches_on_telemetry_too():
    conf = plugin_conf(["wrangler"])
    assert conf["spark.wrangler.enabled"] == "true" and conf["spark.sparkrm.telemetry.enabled"] == "true"
    assert plugin_conf(["telemetry"])["spark.wrangler.enabled"] == "false"
