"""Tuner(spark=...): each rung's packs as Spark tasks on a real local-cluster's two executors.

The search must equal the same search in the test's own process (same trials, same scores), spread its
packs over both executors, and survive losing an executor mid-search with the same result.
"""

from __future__ import annotations

import os
import signal
import sys

import numpy as np
import pytest
from pyspark import cloudpickle

from tests.helpers import eventually, executor_ids

from . import conftest
from .conftest import SMALL_SPACE as SPACE
from .conftest import small_classifier as build

SPARK_SESSION = dict(master="local-cluster[2,1,1024]")

# build and the callback travel to the executors by value: the tests package is not installed there.
cloudpickle.register_pickle_by_value(sys.modules[__name__])
cloudpickle.register_pickle_by_value(conftest)


def kill_its_executor_once(marker):
    """A callback that, at its first epoch end inside a Spark task, SIGKILLs that task's executor JVM.

    Once per search (the marker file says it happened, and which executor). Outside a task it does nothing.
    """
    import keras

    class KillItsExecutorOnce(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            from tf_packing.tuner.spark_packs import executor_process

            executor = executor_process()
            if executor is None or os.path.exists(marker):
                return
            with open(marker, "w") as f:
                f.write(executor[0])
            os.kill(executor[1], signal.SIGKILL)

    return KillItsExecutorOnce()


def search(digits, directory, **kw):
    from tf_packing import Tuner

    x, y, xv, yv = digits
    callbacks = kw.pop("callbacks", None)
    tuner = Tuner(build, SPACE, max_epochs=3, factor=3, seed=0, progress=False, directory=directory, **kw)
    return tuner.search(x, y, validation_data=(xv, yv), callbacks=callbacks)


def assert_same_search(local, remote):
    rows_local, rows_remote = local.results(), remote.results()
    assert [r["trial"] for r in rows_remote] == [r["trial"] for r in rows_local]
    assert [r["epochs"] for r in rows_remote] == [r["epochs"] for r in rows_local]
    assert np.allclose([r["val_accuracy"] for r in rows_remote], [r["val_accuracy"] for r in rows_local],
                       atol=1e-5)
    assert remote.best_config_ == local.best_config_
    assert remote.best_score_ == pytest.approx(local.best_score_, abs=1e-5)


@pytest.fixture(scope="module")
def local(tf_det, digits, tmp_path_factory):
    """The same search in the test's own process: what every search on the executors must find (run once)."""
    return search(digits, tmp_path_factory.mktemp("local"))


def test_packs_run_as_tasks_on_both_executors_and_find_what_the_local_search_finds(local, spark, digits,
                                                                                     tmp_path):
    eventually(lambda: len(executor_ids(spark)) == 2, timeout=120)  # the slots the packs are sized by
    remote = search(digits, tmp_path / "remote", spark=spark)
    assert_same_search(local, remote)
    # Two slots: the first rung's three trials go in two packs (one per slot), bracket 0's two in one each.
    assert [g["sizes"] for g in remote.groups_] == [[2, 1], [1], [1, 1]]
    assert {e["executor"] for e in remote.executors_} == {"0", "1"}
    best = remote.best_model().predict(digits[2], verbose=0).argmax(1)  # read back from the executors' files
    assert np.mean(best == digits[3]) == pytest.approx(remote.best_score_)
    # The shared copies of the data and checkpoints are gone; the project folder keeps the results'.
    assert not (tmp_path / "remote" / "tuner" / "executors").exists()
    assert len(list((tmp_path / "remote" / "tuner" / "checkpoints").iterdir())) == 3


def test_a_search_that_loses_an_executor_mid_rung_ends_with_the_same_trials_and_scores(local, spark, digits,
                                                                                         tmp_path):
    """Compared with the local search without the callback: it only kills inside a task, and a callback makes
    the tuner score every epoch, which changes no trial's score."""
    marker = tmp_path / "killed"
    remote = search(digits, tmp_path / "remote", spark=spark, callbacks=[kill_its_executor_once(str(marker))])
    assert marker.read_text() in {"0", "1"}  # an executor died with a pack under way
    assert_same_search(local, remote)


def test_spark_needs_a_shared_directory_and_arrays(tf_det, spark, digits, tmp_path):
    from tf_packing import Tuner

    with pytest.raises(ValueError, match="directory="):
        Tuner(build, SPACE, max_epochs=3, spark=spark)
    x, y, xv, yv = digits
    tuner = Tuner(build, SPACE, max_epochs=3, spark=spark, directory=tmp_path, progress=False)
    with pytest.raises(ValueError, match="NumPy arrays.*for x"):
        tuner.search(list(x), y, validation_data=(xv, yv))
