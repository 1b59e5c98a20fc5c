"""Bad input to Wrangler's command line and API: one line each, nothing of the user's overwritten.

A model scores counters by name: a recording whose counters were renamed (another Spark or sparkrm
version) is refused naming them, never scored by column position.
"""

import json

import numpy as np
import pytest

from spark_plugin.errors import NotOursError, SparkrmError, UsageError
from spark_plugin.wrangler import StragglerPredictor, Wrangler, build_dataset, choose_confidence, evaluate
from spark_plugin.wrangler.__main__ import main

from .synthetic import telemetry
from .test_cli import write_telemetry


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A trained joblib model, a recording like its own, and one whose throttling counter was renamed."""
    folder = tmp_path_factory.mktemp("wrangler-bad-input")
    write_telemetry(folder / "train.telemetry.jsonl", *telemetry(seed=1, seconds=300))
    tasks, nodes = telemetry(seed=2, seconds=300)
    write_telemetry(folder / "same.telemetry.jsonl", tasks, nodes)
    write_telemetry(folder / "renamed.telemetry.jsonl", tasks,
                    nodes.rename(columns={"cgroupThrottledPct": "cgroupThrottledPercent"}))
    assert main(["train", str(folder / "train.telemetry.jsonl"), "--out", str(folder / "m.joblib"),
                 "--min-node-tasks", "50"]) == 0
    return folder


def run(argv, capsys) -> tuple[int, str]:
    """Exit status and stderr of the command line (argparse's refusals exit)."""
    capsys.readouterr()
    try:
        status = main(argv)
    except SystemExit as e:
        status = e.code
    return status, capsys.readouterr().err


def assert_one_line(err: str, *parts: str) -> None:
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    for part in parts:
        assert part in err, err


@pytest.mark.parametrize("command", ["evaluate", "choose"])
def test_a_model_is_refused_on_a_recording_that_lacks_its_counters(files, capsys, command):
    status, err = run([command, str(files / "m.joblib"), str(files / "renamed.telemetry.jsonl")], capsys)
    assert status == 2
    assert_one_line(err, f"model {files / 'm.joblib'} reads counters this telemetry lacks: cgroupThrottledPct.",
                    "same Spark and sparkrm versions", "or retrain")


def test_counters_are_matched_by_name_not_position(files):
    model = StragglerPredictor.load(files / "m.joblib")
    tasks, nodes = telemetry(seed=2, seconds=300)
    data = build_dataset(tasks, nodes, max_age_ms=2000)
    shuffled = build_dataset(tasks, nodes[list(nodes.columns[::-1])], max_age_ms=2000)
    assert shuffled.features != data.features
    assert json.dumps(evaluate(model, shuffled, confidence=0.7)) == json.dumps(evaluate(model, data, confidence=0.7))
    assert choose_confidence(model, shuffled) == choose_confidence(model, data)
    renamed = build_dataset(tasks, nodes.rename(columns={"load1": "loadavg1"}), max_age_ms=2000)
    with pytest.raises(SparkrmError, match="^the model reads counters this telemetry lacks: load1. Record"):
        evaluate(model, renamed, confidence=0.7)


@pytest.mark.parametrize("argv, message", [
    (["evaluate", "--confidence", "5", "MODEL", "SAME"],
     "--confidence must be a number in [0, 1) (as spark.wrangler.confidence). Got '5'."),
    (["train", "--min-node-tasks", "0", "SAME", "--out", "OUT"],
     "--min-node-tasks must be an integer in [10, 10000000] (as spark.wrangler.train.minNodeTasks). Got '0'."),
    (["choose", "--beta", "1", "MODEL", "SAME"], "--beta must be a number in (1, 10] (as spark.wrangler.beta)."),
    (["train", "--scope", "app", "SAME", "--out", "OUT"],
     "--scope must be one of 'stage', 'job' (as spark.wrangler.scope). Got 'app'."),
])
def test_options_are_checked_by_their_keys_rule(files, capsys, argv, message):
    paths = {"MODEL": files / "m.joblib", "SAME": files / "same.telemetry.jsonl", "OUT": files / "new.joblib"}
    status, err = run([str(paths.get(a, a)) for a in argv], capsys)
    assert status == 2
    assert_one_line(err, message)
    assert not (files / "new.joblib").exists()


def test_the_api_checks_the_same_rules_where_the_values_enter(files):
    with pytest.raises(UsageError, match=r"^StragglerPredictor's min_node_tasks must be an integer in \[10, "):
        StragglerPredictor(min_node_tasks=0)
    rows = build_dataset(*telemetry(seed=2, seconds=60), max_age_ms=2000)
    with pytest.raises(UsageError, match=r"^evaluate's confidence must be a number in \[0, 1\) .* Got 5\."):
        evaluate(StragglerPredictor.load(files / "m.joblib"), rows, confidence=5)
    with pytest.raises(UsageError, match=r"^Wrangler's confidence must be a number in \[0, 1\)"):
        Wrangler(None, confidence=1.5)
    with pytest.raises(UsageError, match="^Wrangler's warmup_ms must be a duration >= 1s"):
        Wrangler(None, warmup_ms=0)  # an explicit 0 is refused, never replaced by the default


@pytest.mark.parametrize("content", [b"my thesis, not a model\n", b"\x80\x04garbage", b""])
def test_export_of_a_file_that_is_no_model_is_one_line(files, capsys, tmp_path, content):
    garbage = tmp_path / "model.joblib"
    garbage.write_bytes(content)
    status, err = run(["export", str(garbage), "--out", str(tmp_path / "m.json")], capsys)
    assert status == 2
    assert_one_line(err, f"model {garbage} is not a joblib model (", "python -m spark_plugin.wrangler train")
    assert garbage.read_bytes() == content and not (tmp_path / "m.json").exists()
    status, err = run(["export", str(tmp_path / "missing.joblib"), "--out", str(tmp_path / "m.json")], capsys)
    assert status == 2
    assert_one_line(err, f"model {tmp_path / 'missing.joblib'} is missing, not a Wrangler model.")


@pytest.mark.parametrize("name", ["results.joblib", "results.json"])
def test_out_never_overwrites_a_file_sparkrm_did_not_write(files, capsys, tmp_path, name):
    mine = tmp_path / name
    mine.write_text('{"format": "my own results"}')
    for argv in (["train", str(files / "same.telemetry.jsonl"), "--out", str(mine)],
                 ["export", str(files / "m.joblib"), "--out", str(mine)]):
        if argv[0] == "export" and mine.suffix != ".json":
            continue
        status, err = run(argv, capsys)
        assert status == 2
        assert_one_line(err, f"--out {mine} exists and sparkrm did not write it")
        assert mine.read_text() == '{"format": "my own results"}'
    with pytest.raises(NotOursError, match="^--out .* exists and sparkrm did not write it"):
        StragglerPredictor.load(files / "m.joblib").save(mine, what="--out")


def test_out_replaces_a_model_sparkrm_wrote_and_creates_its_folder(files, capsys, tmp_path):
    for out in (tmp_path / "new" / "m.json", tmp_path / "new" / "m.json"):  # the second run replaces the first
        assert run(["export", str(files / "m.joblib"), "--out", str(out)], capsys)[0] == 0
    model = StragglerPredictor.load(files / "m.joblib")
    model.save(tmp_path / "copy.joblib")
    assert np.array_equal(StragglerPredictor.load(model.save(tmp_path / "copy.joblib")).features_, model.features_)
