"""Labelling: Definition 3.1 with stage/job scope and the zero-byte fallback, checked by hand."""

import pandas as pd
import pytest

from spark_plugin.wrangler.labels import label_tasks


def tasks(rows):
    cols = ["stageId", "jobId", "durationMs", "inputBytes", "shuffleWriteBytes", "status"]
    return pd.DataFrame([dict(zip(cols, r)) for r in rows]).assign(stageAttempt=0)


def test_a_task_straggles_when_its_time_per_byte_exceeds_beta_times_the_stage_median():
    # nd: 1.0, 1.0, 1.3 (not > 1.3 x median 1.0), 1.31, 2.0 per byte; the median of the stage is 1.3.
    t = tasks([(1, 0, 100, 100, 0, "SUCCESS"), (1, 0, 200, 100, 100, "SUCCESS"), (1, 0, 130, 100, 0, "SUCCESS"),
               (1, 0, 262, 200, 0, "SUCCESS"), (1, 0, 400, 200, 0, "SUCCESS")])
    out = label_tasks(t, beta=1.3)
    assert out["nd"].tolist() == [1.0, 1.0, 1.3, 1.31, 2.0]
    assert out["straggler"].tolist() == [False, False, False, False, True]  # 1.69 is the bar; strict >
    assert label_tasks(t, beta=1.05)["straggler"].tolist() == [False, False, False, False, True]
    assert label_tasks(t, beta=1.001)["straggler"].tolist() == [False, False, False, True, True]


def test_zero_byte_tasks_are_compared_by_duration_with_the_other_zero_byte_tasks():
    t = tasks([(1, 0, 100, 0, 0, "SUCCESS"), (1, 0, 100, 0, 0, "SUCCESS"), (1, 0, 140, 0, 0, "SUCCESS"),
               (1, 0, 10, 1000, 0, "SUCCESS"), (1, 0, 10, 1000, 0, "SUCCESS")])
    out = label_tasks(t)
    assert out["nd"].tolist() == [100.0, 100.0, 140.0, 0.01, 0.01]
    assert out["straggler"].tolist() == [False, False, True, False, False]


def test_job_scope_pools_the_stages_of_a_job_and_failed_attempts_are_dropped():
    t = tasks([(1, 0, 100, 100, 0, "SUCCESS"), (1, 0, 100, 100, 0, "SUCCESS"), (2, 0, 300, 100, 0, "SUCCESS"),
               (2, 0, 300, 100, 0, "SUCCESS"), (2, 0, 300, 100, 0, "SUCCESS"), (2, 0, 9000, 100, 0, "FAILED")])
    assert label_tasks(t, scope="stage")["straggler"].tolist() == [False] * 5
    assert label_tasks(t, scope="job")["straggler"].tolist() == [False, False, False, False, False]
    t.loc[0, "durationMs"] = 50
    t.loc[1, "durationMs"] = 50
    t.loc[2, "durationMs"] = 50
    assert label_tasks(t, scope="job")["straggler"].tolist() == [False, False, False, True, True]


def test_bad_parameters_are_refused_with_their_rule():
    t = tasks([(1, 0, 100, 100, 0, "SUCCESS")])
    with pytest.raises(ValueError, match=r"beta must be a number in \(1, 10\] \(as spark.wrangler.beta\). Got 1.0"):
        label_tasks(t, beta=1.0)
    with pytest.raises(ValueError, match=r"scope must be one of .stage., .job. \(as spark.wrangler.scope\). Got .app."):
        label_tasks(t, scope="app")
