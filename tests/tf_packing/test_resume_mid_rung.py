"""A search stopped inside a rung resumes each trial from the last epoch it finished, not from the rung's start."""

from __future__ import annotations

import json

import numpy as np
import pytest

from .conftest import SMALL_SPACE as SPACE
from .conftest import small_classifier as build

#: One entry per epoch any trial finished, across searches (the callbacks are copied per trial; this is shared).
EPOCH_ENDS = []


class Stopped(Exception):
    """What the stopping callback raises: the search ends there, as a killed process would."""


def stop_once(marker):
    """A callback that stops the search as its trial begins epoch index 2 (the last of a 3-epoch rung), once.

    It also counts every epoch end in :data:`EPOCH_ENDS`. With the marker file present it never stops.
    """
    import os

    import keras

    class StopOnce(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            if epoch == 2 and not os.path.exists(marker):
                open(marker, "w").close()
                raise Stopped()

        def on_epoch_end(self, epoch, logs=None):
            EPOCH_ENDS.append(epoch)

    return StopOnce()


def tuner(directory):
    from tf_packing import Tuner

    return Tuner(build, SPACE, max_epochs=3, factor=3, seed=0, progress=False, directory=directory)


def test_a_search_stopped_mid_rung_continues_from_each_trials_last_epoch(tf_det, digits, tmp_path):
    x, y, xv, yv = digits
    never = tmp_path / "never"
    never.touch()
    del EPOCH_ENDS[:]
    reference = tuner(tmp_path / "reference").search(x, y, validation_data=(xv, yv), callbacks=[stop_once(never)])
    epochs_reference = len(EPOCH_ENDS)

    del EPOCH_ENDS[:]
    marker = tmp_path / "stopped"
    with pytest.raises(Stopped):
        tuner(tmp_path / "run").search(x, y, validation_data=(xv, yv), callbacks=[stop_once(marker)])
    epochs_before = len(EPOCH_ENDS)
    partial = {int(p.stem.removeprefix("trial_")): json.loads(p.read_text())
               for p in (tmp_path / "run" / "tuner" / "partial").glob("trial_*.json")}
    assert [p["epochs"] for p in partial.values()] == [2]  # the promoted trial, two epochs into its 3-epoch rung
    (stopped_trial, progress), = partial.items()
    assert len(progress["scores"]) == 1  # the epoch it trained in this rung, scored

    del EPOCH_ENDS[:]
    resumed = tuner(tmp_path / "run").search(x, y, validation_data=(xv, yv), callbacks=[stop_once(marker)])
    assert EPOCH_ENDS[0] == 2  # the stopped trial went on at its third epoch
    assert epochs_before + len(EPOCH_ENDS) == epochs_reference  # no epoch trained twice
    rows, rows_reference = resumed.results(), reference.results()
    assert [(r["trial"], r["epochs"]) for r in rows] == [(r["trial"], r["epochs"]) for r in rows_reference]
    assert np.allclose([r["val_accuracy"] for r in rows], [r["val_accuracy"] for r in rows_reference], atol=1e-6)
    assert resumed.curves_.keys() == reference.curves_.keys()
    assert all(np.allclose(resumed.curves_[t], reference.curves_[t], atol=1e-6) for t in reference.curves_)
    assert len(resumed.curves_[stopped_trial]) == 3
    assert not (tmp_path / "run" / "tuner" / "partial").exists()  # cleared once the rung ended
