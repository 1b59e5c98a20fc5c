"""Profiler metrics: the formulas exactly, and the shape of a real (tiny) profile; never timings."""

from __future__ import annotations

import pytest

from .conftest import make_mlp


def test_impv_formula(tf_det):
    from tf_packing.repack.profiler import PackProfile, impv

    assert impv(10.0, 6.0) == pytest.approx(0.4)
    assert impv(10.0, 11.0) == pytest.approx(-0.1)  # the thesis's range for two models: -10% ... +40%
    prof = PackProfile(2, [32, 32], 5, 3, [0.004, 0.006], {"packed": 0.008})
    assert prof.t_seq == pytest.approx(0.010) and prof.impv("packed") == pytest.approx(0.2)
    assert prof.to_dict()["impv"] == {"packed": pytest.approx(0.2)}


def test_profile_and_switching_overhead_on_cpu(tf_det, toy_data):
    from tf_packing.repack.profiler import profile, switching_overhead

    x, y = toy_data
    prof = profile(lambda i: make_mlp(i), 2, x, y, batch_sizes=[32, 32], steps=3, repeats=2)
    assert (prof.n_models, prof.steps, prof.repeats) == (2, 3, 2)
    assert list(prof.t_pack) == ["packed"]
    assert [len(r) for r in prof.raw["models"]] == [2, 2] and len(prof.raw["packed"]) == 2
    assert prof.peak_bytes == {"models": [None, None], "packed": None}  # no GPU here
    mixed = profile(lambda i: make_mlp(i), 2, x, y, batch_sizes=[32, 16], steps=2, repeats=1, keras_baseline=True)
    assert [len(r) for r in mixed.raw["keras_fit"]] == [1, 1] and prof.t_seq_keras is None
    assert mixed.t_seq_keras == pytest.approx(sum(r[0] for r in mixed.raw["keras_fit"]))
    sw = switching_overhead(lambda i: make_mlp(i), 2, x, y, batch_size=100)
    assert sw["swoh"] == pytest.approx(sw["t_e_seq"] - sum(sw["t_e_models"]))
    assert len(sw["t_e_models"]) == 2
