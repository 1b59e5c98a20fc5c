"""A JSON model is checked completely before it is used, against one JSON Schema that Python and the JVM share.

A model whose ``format`` tag is right but whose fields are wrong used to be accepted, and every decision
tick then failed inside ``WranglerModel.predict``: Wrangler ran without holds and said so only in a
WARN per hundred ticks. Now ``model.schema.json`` (a JSON Schema that the jar carries) says what a model is:
Python checks a file against it with ``jsonschema`` when ``spark.wrangler.model.path`` is set, the driver
plugin binds it with Jackson (``ModelFile``) at start-up, and both refuse a bad one with the same line
naming the key, the file, the field and the fix. Real files, a real JVM.
"""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from jsonschema import Draft202012Validator

from spark_plugin import __main__ as cli
from spark_plugin.errors import ConfigError
from spark_plugin.keys import KEYS
from spark_plugin.wrangler import StragglerPredictor, build_dataset
from spark_plugin.wrangler.export import to_json
from spark_plugin.wrangler.model_file import SCHEMA, problems

from tests.plain_jvm import doubles

from .synthetic import telemetry

KEY = "spark.wrangler.model.path"
FIX = KEYS[KEY].fix()


@pytest.fixture(scope="module")
def trained() -> dict:
    """The JSON of a predictor fitted on synthetic telemetry: a node model ("2"), node and workload blocks."""
    tasks, nodes = telemetry(seed=3, seconds=400)
    predictor = StragglerPredictor(min_node_tasks=50).fit(build_dataset(tasks, nodes, max_age_ms=2000))
    document = json.loads(json.dumps(to_json(predictor)))
    assert list(document["nodes"]) == ["2"] and document["shared"]["nodes"] and document["shared"]["workloads"]
    return document


def refusal(path: Path) -> str | None:
    try:
        KEYS.validate({KEY: str(path)})
    except ConfigError as e:
        return str(e)
    return None


def written(tmp_path: Path, document, name="model.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return path


def test_the_schema_is_a_json_schema_that_words_every_value_it_checks():
    Draft202012Validator.check_schema(SCHEMA)

    def unworded(schema, where):
        if isinstance(schema, dict):
            if "type" in schema and "description" not in schema:  # a message would have no words for it
                yield where
            for name, sub in schema.items():
                yield from unworded(sub, f"{where}/{name}")
    assert list(unworded(SCHEMA, "#")) == []


def test_a_trained_and_exported_model_matches_the_schema(trained, tmp_path):
    assert problems(trained) == []
    assert refusal(written(tmp_path, trained)) is None


def _set(path, value):
    def mutate(doc):
        *parents, last = path
        for p in parents:
            doc = doc[p]
        doc[last] = value
    return mutate


def _delete(*path):
    def mutate(doc):
        *parents, last = path
        for p in parents:
            doc = doc[p]
        del doc[last]
    return mutate


def _add_feature(doc):
    doc["features"].append("extraCounter")


N = 4  # counters of the synthetic telemetry
BROKEN = [
    (_set(["scaler", "scale"], "oops"),
     "scaler.scale must be an array of numbers or nulls, one per entry of features; got a string"),
    (_delete("shared", "intercept"), "shared.intercept is missing; it must be a number"),
    (_set(["nodes", "2", "weights"], [0.5] * (N - 1)),
     f"nodes.2.weights must have as many entries as features ({N}); got an array of {N - 1} entries"),
    (_set(["shared", "weights", 1], "0.3"), "shared.weights[1] must be a number; got a string"),
    (_set(["shared", "intercept"], 10 ** 400), "shared.intercept must be a number; got a number out of range"),
    (_set(["nodes", "2", "sigmoids", 0, 1], "x"), "nodes.2.sigmoids[0][1] must be a number; got a string"),
    (_set(["nodes", "2", "bias"], 0.0), "nodes.2.bias is not a field of nodes.2; its fields are weights, intercept, "
                                        "sigmoids"),
    (_set(["scaler", "offset", 0], True), "scaler.offset[0] must be a number or null; got true"),
    (_set(["shared", "sigmoids"], []),
     "shared.sigmoids must be a non-empty array of [a, b] pairs of numbers; got an array of 0 entries"),
    (_set(["shared", "sigmoids", 0], [1.0, 2.0, 3.0]), "shared.sigmoids[0] must be an array of 2 numbers; got an array "
                                                       "of 3 entries"),
    (_set(["shared", "intercept"], None), "shared.intercept must be a number; got null"),
    (_set(["shared", "workloads", "default"], None),
     "shared.workloads.default must be an array of numbers, one per entry of features; got null"),
    (_set(["features"], []), "features must be a non-empty array of non-empty strings; got an array of 0 entries"),
    (_set(["features", 0], ""), "features[0] must be a non-empty string; got an empty string"),
    (_set(["format"], "sparkrm-wrangler-model-v2"), 'format must be "sparkrm-wrangler-model"; got a string'),
    (_set(["scalr"], {}), "scalr is not a field of the file; its fields are format, features, scaler, shared, nodes"),
    (_delete("nodes"), "nodes is missing; it must be an object whose every value is an object with the fields "
                       "weights, intercept, sigmoids"),
    (_add_feature, f"scaler.scale must have as many entries as features ({N + 1}); got an array of {N} entries"),
]


@pytest.mark.parametrize("mutate,problem", BROKEN)
def test_a_broken_model_is_refused_in_one_line_naming_file_field_and_fix(trained, tmp_path, mutate, problem):
    document = copy.deepcopy(trained)
    mutate(document)
    path = written(tmp_path, document)
    assert refusal(path) == f"{KEY}={path} is not a valid Wrangler model: {problem}. {FIX}"


def test_submit_args_refuses_a_broken_or_missing_model_before_any_jvm_starts(trained, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("spark_plugin.activation.jar_path", lambda: Path("/opt/sparkrm.jar"))
    document = copy.deepcopy(trained)
    document["scaler"]["scale"] = "oops"
    for path in (written(tmp_path, document), tmp_path / "missing.json"):
        assert cli.main(["submit-args", "--features", "wrangler", "--conf", f"{KEY}={path}"]) == 2
        out, err = capsys.readouterr()
        assert err == f"error: {refusal(path)}\n" and err.count("\n") == 1
        assert out == f"{cli.REJECTED_BY_SPARK_SUBMIT}\n"


# The JVM side, in one plain JVM with the jar: the same verdict and the same line for every document,
# and a model the schema accepts is one WranglerModel.predict can always score. SparkrmConf.fileProblem (the
# driver plugin's check at start-up) reaches Wrangler's ModelFile through the check it registers.

@pytest.fixture(scope="module")
def jvm():
    from spark_plugin.jar import jar_path, pyspark_jars_dir
    from tests.plain_jvm import plain_jvm

    with plain_jvm(jar_path(), pyspark_jars_dir() / "*") as jvm:
        yield jvm


def java_refusal(jvm, path: Path) -> str | None:
    message = jvm.dev.sparkrm.conf.SparkrmConf.fileProblem(KEY, str(path))
    return None if message is None else str(message)


def java_load_refusal(jvm, path: Path) -> str | None:
    from py4j.protocol import Py4JJavaError

    try:
        jvm.dev.sparkrm.wrangler.WranglerModel.load(str(path))
    except Py4JJavaError as e:
        return str(e.java_exception.getMessage())
    return None


@pytest.mark.spark
@pytest.mark.parametrize("mutate,problem", BROKEN)
def test_the_jvm_refuses_a_broken_model_with_the_same_line(jvm, trained, tmp_path, mutate, problem):
    document = copy.deepcopy(trained)
    mutate(document)
    path = written(tmp_path, document)
    assert java_refusal(jvm, path) == java_load_refusal(jvm, path) == refusal(path)


@pytest.mark.spark
def test_the_jvm_refuses_unreadable_files_as_python_does(jvm, tmp_path):
    (tmp_path / "folder.json").mkdir()
    cases = {"missing.json": None, "folder.json": None, "empty.json": "", "syntax.json": '{"format": ',
             "trailing.json": '{"format": 1} {}', "nan.json": '{"a": NaN}', "list.json": "[]", "null.json": "null",
             "huge.json": '{"format": 1e400}', "model.joblib": "\x80\x04 not looked into"}
    for name, text in cases.items():
        if text is not None:
            (tmp_path / name).write_text(text)
        python, java = refusal(tmp_path / name), java_refusal(jvm, tmp_path / name)
        assert (python is None) == (java is None) == (name == "model.joblib"), (name, python, java)
        if "cannot be read as JSON" in (python or ""):  # the two parsers word their findings differently
            assert java.startswith(f"{KEY}={tmp_path / name} cannot be read as JSON (") and java.endswith(FIX), java
        else:
            assert java == python, name


def _json_values():
    scalars = st.one_of(st.none(), st.booleans(), st.integers(-10, 10),
                        st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=3))
    return st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.dictionaries(st.text(max_size=3), inner, max_size=3)),
                        max_leaves=6)


def _paths(node, prefix=()):
    """Every (path, node) in a document, the root included."""
    yield prefix, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


def _reordered(node, rng):
    """``node`` with the fields of every object in another order (Jackson meets them in document order)."""
    if isinstance(node, dict):
        items = list(node.items())
        rng.shuffle(items)
        return {k: _reordered(v, rng) for k, v in items}
    return [_reordered(v, rng) for v in node] if isinstance(node, list) else node


@st.composite
def small_models(draw):
    """A valid model of 1-3 features with a few node and workload blocks, then up to two damages anywhere, its
    fields maybe in another order: a model with several problems must get the same first one on both sides."""
    n = draw(st.integers(1, 3))
    vec = st.lists(st.floats(-5, 5), min_size=n, max_size=n)
    linear = st.fixed_dictionaries({"weights": vec, "intercept": st.floats(-5, 5),
                                    "sigmoids": st.lists(st.lists(st.floats(-5, 5), min_size=2, max_size=2),
                                                         min_size=1, max_size=3)})
    names = st.text(alphabet="0123ab", min_size=1, max_size=2)
    doc = {"format": "sparkrm-wrangler-model", "features": [f"c{i}" for i in range(n)],
           "scaler": {"scale": draw(st.lists(st.one_of(st.none(), st.floats(0, 1)), min_size=n, max_size=n)),
                      "offset": draw(st.lists(st.floats(-1, 1), min_size=n, max_size=n))},
           "shared": {**draw(linear), "nodes": draw(st.dictionaries(names, vec, max_size=2)),
                      "workloads": draw(st.dictionaries(names, vec, max_size=2))},
           "nodes": draw(st.dictionaries(names, linear, max_size=2))}
    for damage in draw(st.lists(st.sampled_from(["replace", "delete", "add"]), max_size=2)):
        paths = [p for p, _ in _paths(doc) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = doc
        for p in path[:-1]:
            parent = parent[p]
        if damage == "replace":
            parent[path[-1]] = draw(_json_values())
        elif damage == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=4))] = draw(_json_values())
        else:
            parent.append(draw(_json_values()))
    return _reordered(doc, draw(st.randoms())) if draw(st.booleans()) else doc


SCRATCH = Path(tempfile.mkdtemp(prefix="sparkrm-model-fuzz-"))


@pytest.mark.spark
@settings(max_examples=300, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_models(), st.lists(st.one_of(st.none(), st.floats(-1e6, 1e6)), min_size=3, max_size=3),
       st.sampled_from(["0", "1", "a", "zz"]), st.sampled_from(["default", "0", "other"]))
def test_python_and_the_jvm_judge_every_model_alike_and_an_accepted_one_always_scores(jvm, doc, sample, node,
                                                                                    workload):
    path = SCRATCH / "model.json"
    path.write_text(json.dumps(doc))
    python = refusal(path)
    assert java_refusal(jvm, path) == python
    if python is None:
        model = jvm.dev.sparkrm.wrangler.WranglerModel.load(str(path))
        raw = [float("nan") if v is None else v for v in sample[:len(doc["features"])]]
        score, confidence = model.predict(doubles(jvm, raw), node, workload)
        assert np.isfinite(score) and 0 <= confidence <= 1
    else:
        assert "\n" not in python and python.startswith(f"{KEY}={path} is not a valid Wrangler model: ")

