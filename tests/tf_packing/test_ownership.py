"""The tuner's folders delete and overwrite only what sparkrm wrote (issue 54); no TensorFlow, no Spark job.

Each refusal is one line naming the path, and the user's files are still there, byte for byte.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from spark_plugin.errors import NotOursError
from spark_plugin.ownership import MARKER
from tf_packing.repack.checkpoint import MemberCheckpoint, read, save
from tf_packing.tuner.project import Project
from tf_packing.tuner.rung_progress import RungProgress
from tf_packing.tuner.spark_packs import SparkPacks

SETTINGS = {"max_epochs": 3, "factor": 3, "objective": "val_accuracy", "seed": 0}
THESIS = b"chapter 1\n"


def refused(call, match: str) -> str:
    """``call()``'s NotOursError message, checked to be one line matching ``match``."""
    with pytest.raises(NotOursError, match=match) as error:
        call()
    assert "\n" not in str(error.value)
    return str(error.value)


def checkpoint(epochs: int = 1) -> MemberCheckpoint:
    return MemberCheckpoint([np.ones((2, 2))], [np.zeros(1)], epochs, [0.5] * epochs)


def test_a_directory_that_is_a_file_is_refused_naming_it(tmp_path):
    thesis = tmp_path / "thesis.txt"
    thesis.write_bytes(THESIS)
    refused(lambda: Project(thesis, "tuner", SETTINGS), rf"^Tuner's directory {thesis} is a file, not a folder: .*"
                                                        r"Pass a folder \(created if missing\)\.$")
    assert thesis.read_bytes() == THESIS


def test_overwrite_deletes_only_a_project_sparkrm_wrote(tmp_path):
    mine = tmp_path / "photos"
    mine.mkdir()
    (mine / "cat.jpg").write_bytes(THESIS)
    for overwrite in (False, True):
        refused(lambda: Project(tmp_path, "photos", SETTINGS, overwrite=overwrite),
                r"photos holds files sparkrm did not write \(cat\.jpg\).* Choose a new or empty folder")
    assert (mine / "cat.jpg").read_bytes() == THESIS and sorted(p.name for p in mine.iterdir()) == ["cat.jpg"]

    project = Project(tmp_path, "p", SETTINGS)
    project.save({"oracle": {}}, {1: checkpoint()})
    assert Project(tmp_path, "p", SETTINGS).load() is not None  # its own folder resumes
    assert Project(tmp_path, "p", SETTINGS, overwrite=True).load() is None  # and is replaced
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == [MARKER]


def test_a_project_written_before_folders_were_marked_is_refused_with_the_fix(tmp_path):
    old = tmp_path / "tuner"
    (old / "checkpoints").mkdir(parents=True)
    (old / "tuner.json").write_text(json.dumps({"settings": SETTINGS}))
    before = (old / "tuner.json").read_bytes()
    for overwrite in (False, True):
        refused(lambda: Project(tmp_path, "tuner", SETTINGS, overwrite=overwrite),
                r"tuner holds a tuner project written by a tf_packing that did not mark its folders "
                r"\(\.sparkrm-owner\).*: delete the folder, or pass another project_name\.$")
    assert (old / "tuner.json").read_bytes() == before and not (old / MARKER).exists()


def test_the_rung_progress_and_the_executors_files_are_cleared_only_while_they_hold_nothing_else(tmp_path):
    project = Project(tmp_path, "p", SETTINGS)
    progress = RungProgress(project.path / "partial")
    progress.begin()
    progress.write(3, checkpoint(2), [0.5], [(1.0, 3, 0.5)], killed=False)
    assert list(progress.read()) == [3]
    progress.clear()
    assert not progress.folder.exists()

    progress.begin()
    executors = SparkPacks(None, project.path / "executors")  # sharing and clearing the files start no Spark job
    executors.share_data((np.zeros((4, 2)), np.zeros(4)), None)
    for folder, clear in ((progress.folder, progress.clear), (executors.folder, executors.clear)):
        (folder / "notes.txt").write_bytes(THESIS)  # the user's, put in sparkrm's folder
        refused(clear, rf"{folder} holds files sparkrm did not write \(notes\.txt\)")
        assert (folder / "notes.txt").read_bytes() == THESIS


def test_a_checkpoint_replaces_only_a_checkpoint(tmp_path):
    path = tmp_path / "trial_1.npz"
    save(checkpoint(1), path)
    save(checkpoint(2), path)  # its own: replaced
    assert read(path).epochs_done == 2
    for name, content in (("thesis.npz", THESIS), ("arrays.npz", None)):
        theirs = tmp_path / name
        if content is None:
            np.savez(theirs, x=np.arange(3))  # an npz of the user's
        else:
            theirs.write_bytes(content)
        before = theirs.read_bytes()
        refused(lambda: save(checkpoint(), theirs), rf"{name} exists and sparkrm did not write it: it overwrites only "
                                                    "a tf_packing checkpoint of its own")
        assert theirs.read_bytes() == before
