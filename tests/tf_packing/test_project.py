"""The tuner's project folder refuses another build_fn or search space, resumes its own (no TensorFlow)."""

from __future__ import annotations

import functools
import json
import logging

import pytest

from tf_packing import HyperParameters
from tf_packing.tuner.project import Project, build_fn_identity

SETTINGS = {"max_epochs": 3, "factor": 3, "objective": "val_accuracy", "seed": 0}


def build(hp):
    hp.Int("units", 8, 32, step=8)
    hp.Choice("optimizer", ["adam", "sgd"])
    return hp


def build_other(hp):
    hp.Int("units", 8, 32, step=8)
    hp.Choice("optimizer", ["adam", "sgd"])
    return hp


def space(units=(8, 32), extra=False):
    hp = HyperParameters()
    hp.Int("units", *units, step=8)
    hp.Float("lr", 1e-4, 1e-1, sampling="log")
    hp.Choice("optimizer", ["adam", "sgd"])
    if extra:
        hp.Boolean("dropout")
    return hp


def identity(fn=build, hp=None):
    return {"build_fn": build_fn_identity(fn), "search_space": (hp or space()).describe()}


def written(tmp_path, **kw) -> Project:
    """A project folder with one saved (empty) search, as a tuner leaves it after its first rung."""
    project = Project(tmp_path, "p", SETTINGS, identity=identity(**kw))
    project.save({"oracle": {}}, {})
    return project


def test_the_same_build_fn_and_space_resume(tmp_path):
    written(tmp_path)
    state, checkpoints = Project(tmp_path, "p", SETTINGS, identity=identity()).load()
    assert state == {"oracle": {}} and checkpoints == {}


@pytest.mark.parametrize("kw, message", [
    (dict(fn=build_other), r"p holds a search by build_fn tests\.tf_packing\.test_project\.build, not "
                           r"tests\.tf_packing\.test_project\.build_other\. Pass overwrite=True to start afresh, "
                           r"or another project_name\.$"),
    (dict(hp=space(units=(8, 64))), r"p holds a search over another search space \('units' was int in \[8, 32\] "
                                    r"step 8, is int in \[8, 64\] step 8\)\. Pass overwrite=True"),
    (dict(hp=space(extra=True)), r"another search space \('dropout' is new\)\. Pass overwrite=True"),
])
def test_another_build_fn_or_search_space_is_refused_in_one_line(tmp_path, kw, message):
    written(tmp_path)
    with pytest.raises(ValueError, match=message) as refused:
        Project(tmp_path, "p", SETTINGS, identity=identity(**kw)).load()
    assert "\n" not in str(refused.value) and str(tmp_path / "p") in str(refused.value)
    assert Project(tmp_path, "p", SETTINGS, identity=identity(**kw), overwrite=True).load() is None


def test_a_space_that_lost_a_name_and_an_edited_build_fn_are_refused(tmp_path):
    written(tmp_path, hp=space(extra=True))
    with pytest.raises(ValueError, match=r"another search space \('dropout' is gone\)"):
        Project(tmp_path, "p", SETTINGS, identity=identity()).load()
    record = json.loads((tmp_path / "p" / "tuner.json").read_text())
    record["identity"]["build_fn"]["source_sha256"] = "0" * 64  # as if build's source was edited since
    record["identity"]["search_space"] = space().describe()
    (tmp_path / "p" / "tuner.json").write_text(json.dumps(record))
    with pytest.raises(ValueError, match=r"another version of build_fn tests\.tf_packing\.test_project\.build "
                                         r"\(its source changed since\)\. Pass overwrite=True"):
        Project(tmp_path, "p", SETTINGS, identity=identity()).load()


def test_a_folder_written_before_identities_were_recorded_resumes_with_a_warning(tmp_path, caplog):
    written(tmp_path)
    record = json.loads((tmp_path / "p" / "tuner.json").read_text())
    del record["identity"]
    (tmp_path / "p" / "tuner.json").write_text(json.dumps(record))
    project = Project(tmp_path, "p", SETTINGS, identity=identity(fn=build_other))
    with caplog.at_level(logging.WARNING, logger="tf_packing.tuner.project"):
        assert project.load() is not None
    assert "records no build_fn or search space" in caplog.text
    project.save({"oracle": {}}, {})  # the next save records them: from then on they are checked
    with pytest.raises(ValueError, match="holds a search by build_fn"):
        Project(tmp_path, "p", SETTINGS, identity=identity()).load()


def test_build_fn_identity_without_source_compares_names_only(tmp_path):
    namespace = {}
    exec(compile("def build(hp):\n    return hp\n", "<stdin>", "exec"), namespace)  # as typed into a REPL
    typed = build_fn_identity(namespace["build"])
    assert typed["name"].endswith(".build") and typed["source_sha256"] is None
    written(tmp_path, fn=namespace["build"])
    assert Project(tmp_path, "p", SETTINGS, identity=identity(fn=namespace["build"])).load() is not None

    class HyperModel:
        def build(self, hp):
            return hp

        def __call__(self, hp):
            return hp

    assert build_fn_identity(HyperModel().build)["name"].endswith("HyperModel.build")
    assert build_fn_identity(HyperModel())["name"].endswith("HyperModel")
    assert build_fn_identity(functools.partial(build, None)) == build_fn_identity(build)
    assert build_fn_identity(build)["source_sha256"] != build_fn_identity(build_other)["source_sha256"]


def test_the_space_is_described_as_declared():
    hp = space()
    with hp.conditional_scope("optimizer", ["sgd"]):
        hp.Float("momentum", 0.0, 0.9, step=0.3)
    hp.Fixed("layers", 2)
    assert hp.describe() == {
        "units": {"kind": "int", "min_value": 8, "max_value": 32, "step": 8, "sampling": "linear"},
        "lr": {"kind": "float", "min_value": 1e-4, "max_value": 0.1, "step": None, "sampling": "log"},
        "optimizer": {"kind": "choice", "values": ["adam", "sgd"]},
        "momentum": {"kind": "float", "min_value": 0.0, "max_value": 0.9, "step": 0.3, "sampling": "linear",
                     "conditions": [["optimizer", ["sgd"]]]},
        "layers": {"kind": "fixed", "values": [2]},
    }
