"""Pack-aware Hyperband on Keras: same results as plain Hyperband, OOM split, early kill, results table."""

from __future__ import annotations

import weakref

import numpy as np
import pytest

from .conftest import SMALL_SPACE as SPACE
from .conftest import counting_builds
from .conftest import small_classifier as build


def search(digits, **kw):
    from tf_packing import Tuner

    x, y, xv, yv = digits
    kw = {"max_epochs": 3, "factor": 3, "seed": 0, "progress": False, **kw}
    build_fn = kw.pop("build_fn", build)
    return Tuner(build_fn, SPACE, **kw).search(x, y, validation_data=(xv, yv))


@pytest.fixture(scope="module")
def plain(tf_det, digits):
    """Plain Hyperband (one model at a time): what every packed search must reproduce."""
    return search(digits, packing="none")


@pytest.fixture(scope="module")
def packed(tf_det, digits):
    """Pack-aware Hyperband, and how many of its models were alive as each was built."""
    counted, peak = counting_builds(build)
    return search(digits, packing="knn", build_fn=counted, reuse_models=3), peak


def test_packed_search_finds_what_plain_hyperband_finds(digits, plain, packed):
    search_packed, _ = packed
    assert [g["sizes"] for g in plain.groups_] == [[1, 1, 1], [1], [1, 1]]
    assert [g["sizes"] for g in search_packed.groups_] == [[3], [1], [2]]
    rows_plain, rows_packed = plain.results(), search_packed.results()
    assert [r["trial"] for r in rows_plain] == [r["trial"] for r in rows_packed]
    assert np.allclose([r["val_accuracy"] for r in rows_plain], [r["val_accuracy"] for r in rows_packed],
                       atol=1e-6)
    assert search_packed.best_config_ == plain.best_config_
    assert search_packed.best_score_ == pytest.approx(plain.best_score_)
    # R=3, eta=3: bracket 1 trains 3 configs for 1 epoch and keeps 1 for 3; bracket 0 trains 2 for 3 epochs.
    assert sorted(t.epochs_done for t in search_packed.oracle_.trials_.values()) == [1, 1, 3, 3, 3]
    table = search_packed.results_table()
    assert table.splitlines()[0] == ("| trial | bracket | batch_size | learning_rate | optimizer | epochs | "
                                     "val_accuracy | status |")
    assert len(table.splitlines()) == 2 + 5
    best = search_packed.best_model().predict(digits[2], verbose=0).argmax(1)
    assert np.mean(best == digits[3]) == pytest.approx(search_packed.best_score_)


#: Layers traced into each live graph. Keyed by the graph itself, not its id(): a graph freed after an
#: out-of-memory split may leave its id to the next pack's graph, which then inherits its count.
_TRACED = weakref.WeakKeyDictionary()


def room_for_two():
    """A layer that runs out of 'device memory' when more than two members are traced into one step."""
    import keras
    import tensorflow as tf

    class RoomForTwo(keras.layers.Layer):
        def call(self, x):
            if not tf.executing_eagerly():  # traced: count the layers traced into one (outermost) graph
                graph = tf.compat.v1.get_default_graph()
                while hasattr(getattr(graph, "outer_graph", None), "outer_graph"):  # up to the tf.function
                    graph = graph.outer_graph
                seen = _TRACED.setdefault(graph, set())
                seen.add(id(self))
                if len(seen) > 2:
                    raise tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor (test device)")
            return x

        def compute_output_shape(self, shape):
            return shape

    return RoomForTwo()


def test_out_of_memory_splits_the_group_and_keeps_results(digits, plain):
    packed = search(digits, packing="knn", build_fn=lambda c: build(c, room_for_two))
    assert packed.oom_splits_ == 1  # the first rung's pack of 3 is split into 2 + 1
    assert np.allclose([r["val_accuracy"] for r in plain.results()],
                       [r["val_accuracy"] for r in packed.results()], atol=1e-6)


def test_early_kill_frees_hopeless_trials(tf_det, digits):
    from tf_packing import KillRule

    tuner = search(digits, packing="knn", early_kill=KillRule(threshold=0.3, boundary=1))
    killed = [t.trial_id for t in tuner.oracle_.trials_.values() if t.status == "killed"]
    assert killed
    assert all(tuner.curves_[tid][-1] < 0.3 for tid in killed)
    trained = sum(len(curve) for curve in tuner.curves_.values())  # epochs each trial really trained
    assert trained < tuner._planned_trial_epochs() == 11
    assert tuner.best_score_ >= 0.3 and tuner.best_config_["learning_rate"] == 0.01


def test_models_are_built_only_while_their_pack_trains(packed):
    tuner, peak = packed
    assert max(max(g["sizes"]) for g in tuner.groups_) == 3
    assert max(peak) == 3  # one pack's models and those kept for reuse, never the whole rung's or the search's


def test_objective_needs_its_metric(tf_det, digits):
    import keras

    def no_metrics(config):
        model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(10, activation="softmax")])
        model.compile("adam", "sparse_categorical_crossentropy")
        return model

    with pytest.raises(ValueError, match=r"objective 'val_accuracy' is not among the model's logs \['val_loss'\]. "
                                         r"Compile the model in build_fn with the metric it names "
                                         r"\(metrics=\['accuracy'\]\)"):
        search(digits, build_fn=no_metrics)


def test_tuner_errors(tf_det, digits):
    from tf_packing import Tuner

    with pytest.raises(ValueError, match="packing must be one of .* Got 'dense'; use 'none' for plain"):
        search(digits, packing="dense")
    with pytest.raises(ValueError, match="cannot tell whether objective 'val_f1_macro' should go up or down"):
        search(digits, objective="val_f1_macro")
    with pytest.raises(ValueError, match="objective 'val_accuracy' is scored on validation data: pass "
                                         "validation_data"):
        Tuner(build, SPACE, max_epochs=3).search(*digits[:2])


@pytest.mark.parametrize("kw, message", [
    (dict(max_group=0), r"^Tuner's max_group must be a whole number in \[1, 64\]\. Got 0\. Pass e\.g\. 8 \(members "
                        r"per pack\)\.$"),
    (dict(group_size=65), r"^Tuner's group_size must be a whole number in \[1, 64\]\. Got 65\."),
    (dict(max_epochs=0), r"^max_epochs \(R\) must be a whole number in \[1, 10000\]\. Got 0\. The thesis uses R=81\.$"),
    (dict(factor=2.5), r"^factor \(eta\) must be a whole number in \[2, 100\]\. Got 2\.5\."),
    (dict(default_batch_size=0), r"^Tuner's default_batch_size must be a whole number in \[1, 65536\]\. Got 0\."),
    (dict(seed=-1), r"^Tuner's seed must be a whole number in \[0, 4294967295\]\. Got -1\."),
    (dict(memory_capacity=0), r"^Tuner's memory_capacity must be a finite number > 0\. Got 0\."),
    (dict(distance_threshold=float("nan")), r"^Tuner's distance_threshold must be a finite number >= 0\. Got nan\."),
    (dict(target=float("inf")), r"^Tuner's target must be a finite number\. Got inf\."),
    (dict(reuse_models=-1), r"^reuse_models must be True, False or a number of models >= 0\. Got -1\.$"),
    (dict(directory=".", project_name="../elsewhere"), r"^Tuner's project_name must be the name of a folder inside "
                                                       r"directory\. Got '\.\./elsewhere'\. Pass e\.g\. 'tuner'\.$"),
])
def test_bad_arguments_are_refused_in_one_line_before_any_model_is_built(tf_det, kw, message):
    from spark_plugin.errors import UsageError
    from tf_packing import Tuner

    def unbuilt(hp):
        raise AssertionError("a model was built before the arguments were checked")

    with pytest.raises(UsageError, match=message) as refused:
        Tuner(unbuilt, **kw)
    assert "\n" not in str(refused.value)


def test_a_directory_that_is_a_file_is_refused_before_any_model_is_built(tf_det, tmp_path):
    from spark_plugin.errors import NotOursError
    from tf_packing import Tuner

    thesis = tmp_path / "thesis.txt"
    thesis.write_text("chapter 1\n")
    with pytest.raises(NotOursError, match=rf"^Tuner's directory {thesis} is a file, not a folder"):
        Tuner(lambda hp: pytest.fail("a model was built"), directory=thesis)
    assert thesis.read_text() == "chapter 1\n"


def test_keep_best_epoch_ranks_each_trial_by_its_best_epoch_in_the_rung_and_keeps_that_state(tf_det, digits):
    """Keras Tuner's scoring: every epoch scored, the rung's best epoch ranks the trial and is the state it keeps."""
    from tf_packing import Tuner
    from tf_packing.repack.checkpoint import load

    x, y, xv, yv = digits
    space = {"batch_size": [32], "learning_rate": [0.3, 1.0, 3.0], "optimizer": ["sgd", "adam"]}  # some diverge
    tuner = Tuner(build, space, max_epochs=3, factor=3, seed=0, progress=False, keep_best_epoch=True)
    tuner.search(x, y, validation_data=(xv, yv))
    for trial in tuner.oracle_.trials_.values():
        start = trial.scores[-2][0] if len(trial.scores) > 1 else 0
        curve = tuner.curves_[trial.trial_id]
        assert len(curve) == trial.epochs_done  # scored every epoch
        assert trial.score == max(curve[start:trial.scores[-1][0]])
    peaked = [t for t in tuner.oracle_.trials_.values() if max(tuner.curves_[t.trial_id]) > tuner.curves_[t.trial_id][-1]]
    assert peaked  # a trial whose best epoch was not its last: it keeps the best one's weights
    for trial in peaked:
        model = load(tuner._build(trial), checkpoint=tuner._ckpts[trial.trial_id])
        accuracy = np.mean(model.predict(xv, verbose=0).argmax(1) == yv)
        assert accuracy == pytest.approx(trial.score)
