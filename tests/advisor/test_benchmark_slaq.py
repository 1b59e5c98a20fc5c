"""The SLAQ advisor benchmark's runtime-model comparison, on iteration times of a known form."""

import pytest

from benchmarks.advisor.analysis import analyze, recorded_run, summarize
from benchmarks.advisor.slaq import runtime_errors, summarize_runtime


def iterations_of(time_of, counts=(1, 2, 3, 4), cpu=4.0, repeat=5):
    return {str(n): [[time_of(n), cpu]] * repeat for n in counts}


def test_each_count_is_predicted_from_the_others_by_both_scalings():
    # an overhead that grows with the cores: the ipso scaling recovers it, the linear one cannot
    rows = runtime_errors(iterations_of(lambda n: 0.2 + 0.1 * n + 4.0 / n))
    assert set(rows) == {"1", "2", "3", "4"}
    for held, row in rows.items():
        assert row["measured_s"] == pytest.approx(0.2 + 0.1 * int(held) + 4.0 / int(held))
        assert row["ipso"]["error"] == pytest.approx(0.0, abs=1e-9)
    assert max(row["linear"]["error"] for row in rows.values()) > 0.05
    summary = summarize_runtime({"kmeans": rows})
    assert summary["ipso"] < 1e-9 < summary["linear"]


def test_with_one_overhead_for_every_count_both_scalings_are_exact():
    rows = runtime_errors(iterations_of(lambda n: 0.3 + 4.0 / n))
    assert all(row[s]["error"] == pytest.approx(0.0, abs=1e-9) for row in rows.values() for s in ("linear", "ipso"))


def test_recorded_trainer_runs_get_their_stages_back_and_the_waves_model_fits_them():
    # results recorded before stage task counts were: every stage of a trainer has --partitions tasks
    conf = {"workload": "slaq", "partitions": 4}
    runs = [recorded_run({"slots": m, "tasks": 40, "wall_s": 1 + 4 * -(-4 // m), "source": ""}, conf)
            for m in (1, 2, 3, 4)]
    assert runs[0].stage_tasks == (4,) * 10
    summary = summarize(analyze({"kmeans": runs}))
    assert summary["holdout_waves"] < 0.02 < summary["holdout_ipso"]
    tpch = recorded_run({"slots": 2, "tasks": 45, "wall_s": 3.0, "source": ""}, {"sf": 1})
    assert tpch.stage_tasks == ()  # unknown: the waves model is left out
