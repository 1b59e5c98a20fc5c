"""Models: scaling fit on the training window, oversampling, calibration, f_{0,n,l}, save/load."""

import numpy as np
import pytest

from spark_plugin.wrangler import StragglerPredictor, build_dataset, evaluate, to_json
from spark_plugin.wrangler.dataset import Dataset
from spark_plugin.wrangler.metrics import counter_importance
from spark_plugin.wrangler.model import Abstaining, CalibratedSVM
from spark_plugin.wrangler.multitask import MultiTaskSVM, augment
from spark_plugin.wrangler.sampling import oversample

from .synthetic import telemetry


@pytest.fixture(scope="module")
def data():
    tasks, nodes = telemetry(seconds=900)
    return build_dataset(tasks, nodes, max_age_ms=2000)


def test_oversampling_balances_the_classes_and_keeps_every_original_row():
    X = np.arange(20, dtype=float).reshape(10, 2)
    y = np.array([0, 0, 1, 0, 0, 0, 0, 1, 0, 0])
    Xb, yb = oversample(X, y, random_state=3)
    assert np.bincount(yb).tolist() == [8, 8]
    assert np.array_equal(Xb[:10], X) and np.array_equal(yb[:10], y)
    assert {tuple(r) for r in Xb[10:]} <= {tuple(X[2]), tuple(X[7])}
    assert oversample(X, np.zeros(10, int))[0] is X  # one class: nothing to balance


def test_the_scaler_is_fitted_on_the_training_window_only_and_clips_later_rows(data):
    model = StragglerPredictor(min_node_tasks=50).fit(data)
    train, later = data.split(2 / 3)
    finite = ~np.isnan(train.X).all(axis=0)
    assert np.allclose(model.scaler_.data_min_[finite], np.nanmin(train.X, axis=0)[finite])
    assert np.allclose(model.scaler_.data_max_[finite], np.nanmax(train.X, axis=0)[finite])
    assert not np.allclose(model.scaler_.data_max_, np.nanmax(data.X, axis=0))  # later rows were not seen
    scaled = model._scale(later.X * 10)
    assert scaled.min() >= 0 and scaled.max() <= 1


def test_confidence_is_monotone_in_the_svm_score(data):
    train, cal = data.split(2 / 3)
    m = CalibratedSVM().fit(train.X, train.y, cal.X, cal.y)
    grid = np.linspace(data.X.min(axis=0), data.X.max(axis=0), 200)
    order = np.argsort(m.decision_function(grid))
    conf = m.confidence(grid)[order]
    assert np.all(np.diff(conf) >= -1e-12)
    assert m.calibrated_on_ == "validation" and 0 <= conf.min() < 0.5 < conf.max() <= 1


def test_per_node_models_catch_the_noisy_executor_and_rarely_flag_the_quiet_ones(data):
    train, test = data.split(0.6)
    model = StragglerPredictor(min_node_tasks=50).fit(train)
    assert sorted(model.node_models_) == ["2"]  # the quiet executors never straggle: shared model
    report = evaluate(model, test, confidence=0.7)
    assert report["after_threshold"]["tpr"] >= 0.9 and report["after_threshold"]["fpr"] <= 0.05
    assert report["per_node"]["2"]["model"] == "node" and report["per_node"]["0"]["model"] == "shared"
    assert report["roc_auc"] > 0.95 and report["per_node"]["2"]["roc_auc"] > 0.95
    assert np.isnan(report["per_node"]["0"]["roc_auc"])  # a quiet node never straggles: nothing to rank
    assert {c["counter"] for c in report["counters"][:2]} & {"cgroupThrottledPct", "procCpuPct"}


def test_counter_importance_names_the_counters_that_carry_the_ranking_and_not_the_noise(data):
    train, test = data.split(0.6)
    model = StragglerPredictor(min_node_tasks=50).fit(train)
    found = counter_importance(model, test)
    drops = {c["counter"]: c["auc_drop"] for c in found}
    # both follow the bursts, so each covers for the other when shuffled: small drops, but the only ones
    assert {c["counter"] for c in found[:2]} == {"cgroupThrottledPct", "procCpuPct"}
    assert min(drops["cgroupThrottledPct"], drops["procCpuPct"]) > 0
    assert drops.get("cpuUserPct", 0.0) < 0.01 * found[0]["auc_drop"]  # pure noise in every executor
    assert counter_importance(model, test.take(test.y == 0)) == []  # one class: nothing to rank


def test_a_node_model_takes_the_candidate_C_that_ranks_its_calibration_rows_best(data):
    from sklearn.metrics import roc_auc_score

    model = StragglerPredictor(min_node_tasks=50, node_C=(1.0, 0.01)).fit(data)
    train, cal = data.split(2 / 3)
    X, Xc = model._scale(train.X), model._scale(cal.X)
    rows, cal_rows = train.nodes == "2", cal.nodes == "2"
    auc = {C: roc_auc_score(cal.y[cal_rows], CalibratedSVM(C=C).fit(X[rows], train.y[rows], Xc[cal_rows],
                                                                     cal.y[cal_rows]).decision_function(Xc[cal_rows]))
           for C in (1.0, 0.01)}
    chosen = model.node_models_["2"].C
    assert auc[chosen] == max(auc.values()) and (chosen == 1.0 or auc[0.01] > auc[1.0])


def test_save_and_load_give_identical_predictions(data, tmp_path):
    model = StragglerPredictor(min_node_tasks=50).fit(data)
    again = StragglerPredictor.load(model.save(tmp_path / "m" / "wrangler.joblib"))
    a = model.predict(data.X[:50], data.nodes[:50], data.workloads[:50])
    b = again.predict(data.X[:50], data.nodes[:50], data.workloads[:50])
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    (tmp_path / "other.joblib").write_bytes((tmp_path / "m" / "wrangler.joblib").read_bytes()[:0])
    import joblib
    joblib.dump({"not": "a model"}, tmp_path / "other.joblib")
    with pytest.raises(ValueError, match="not a Wrangler model"):
        StragglerPredictor.load(tmp_path / "other.joblib")


def test_augmented_features_follow_the_block_layout_with_sqrt_n_and_sqrt_l():
    X = np.array([[1.0, 2.0], [3.0, 4.0]])
    phi = augment(X, np.array([2, -1]), np.array([0, 1]), 3, 2)
    assert phi.shape == (2, 2 * (1 + 3 + 2))
    assert np.allclose(phi[0], [1, 2, 0, 0, 0, 0, np.sqrt(3), 2 * np.sqrt(3), np.sqrt(2), 2 * np.sqrt(2), 0, 0])
    assert np.allclose(phi[1], [3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 3 * np.sqrt(2), 4 * np.sqrt(2)])  # unseen node


def test_multitask_decision_is_the_sum_of_shared_node_and_workload_weights(data):
    nodes = data.nodes
    workloads = np.where(np.arange(len(data)) % 2, "etl", "ml").astype(object)
    m = MultiTaskSVM().fit(data.X / 100, data.y, nodes, workloads)
    for node, workload in (("2", "etl"), ("0", "ml"), ("new", "etl")):
        w, b = m.weights(node, workload)
        x = data.X[:5] / 100
        assert np.allclose(m.decision_function(x, [node] * 5, [workload] * 5), x @ w + b)
    w_new, _ = m.weights("new", "etl")
    w0 = m.model_.svm_.coef_[0][:x.shape[1]]
    d = x.shape[1]
    w_etl = np.sqrt(2) * m.model_.svm_.coef_[0][(1 + len(m.node_ids_)) * d:(2 + len(m.node_ids_)) * d]
    assert np.allclose(w_new, w0 + w_etl)  # an unseen node uses w_0 + w_l


def test_with_scarce_data_the_shared_model_still_predicts_every_node(data):
    sparse = np.zeros(len(data), bool)
    sparse[::30] = True
    model = StragglerPredictor(min_node_tasks=100).fit(data.take(sparse))  # about 65 training rows per node
    assert model.node_models_ == {}
    report = evaluate(model, data.take(~sparse), confidence=0.7)
    assert report["after_threshold"]["tpr"] >= 0.7


def test_training_without_stragglers_is_refused_with_the_fix(data):
    quiet = data.take(data.y == 0)
    with pytest.raises(ValueError, match="need both stragglers and non-stragglers"):
        StragglerPredictor().fit(quiet)


def test_too_few_rows_or_stragglers_name_why_a_model_cannot_be_trained_yet(data):
    assert StragglerPredictor.untrainable_reason(data) is None
    assert "it needs at least 30" in StragglerPredictor.untrainable_reason(data.take(slice(0, 20)))
    calm = data.take(data.y == 0)
    assert "hold 0 stragglers; it needs at least 3 stragglers" in StragglerPredictor.untrainable_reason(calm)


def test_a_node_whose_stragglers_no_counter_foretells_gets_a_model_that_never_flags_it(data):
    rng = np.random.default_rng(5)
    y = data.y.copy()
    quiet = data.nodes == "1"
    y[quiet] = rng.random(quiet.sum()) < 0.15  # ordinary variation: unrelated to any counter
    noisy = Dataset(data.X, y, data.nodes, data.workloads, data.launch_times, data.features)
    model = StragglerPredictor(min_node_tasks=50).fit(noisy)
    assert isinstance(model.node_models_["1"], Abstaining) and model.node_models_["1"].auc <= 0.6
    assert model.model_kind("1") == "abstaining" and model.model_kind("2") == "node"
    scores, conf = model.predict(data.X, data.nodes, data.workloads)
    assert (scores[quiet] == -1).all() and len(set(conf[quiet])) == 1
    assert evaluate(model, noisy, confidence=0.0)["per_node"]["1"]["fp"] == 0  # never flagged, at any p
    assert (scores[data.nodes == "2"] > 0).any()  # the foreseeable node still is
    exported = to_json(model)["nodes"]["1"]
    assert exported["weights"] == [0.0] * len(data.features) and exported["intercept"] == -1.0
    a, b = np.array(exported["sigmoids"]).T
    assert np.isclose(np.mean(1 / (1 + np.exp(-a + b))), conf[quiet][0])  # what the JVM computes from the file
