"""Features come from the executor's latest sample at or before launch: never from the future."""

import numpy as np
import pandas as pd

from spark_plugin.wrangler.dataset import build_dataset, concat
from spark_plugin.wrangler.snapshots import attach_snapshots

from .synthetic import telemetry


def nodes(rows):
    return pd.DataFrame([{"executorId": e, "time": t, "intervalMs": 1000, "load1": v} for e, t, v in rows])


def test_each_task_gets_the_newest_sample_not_after_its_launch_from_its_own_executor():
    samples = nodes([("1", 1000, 1.0), ("1", 2000, 2.0), ("1", 3000, 3.0), ("2", 2500, 9.0)])
    tasks = pd.DataFrame({"executorId": ["1", "1", "1", "2"], "launchTime": [1999, 2000, 2999, 2600]})
    out = attach_snapshots(tasks, samples, max_age_ms=2000)
    assert out[["executorId", "launchTime", "sampleTime", "load1"]].values.tolist() == [
        ["1", 1999, 1000, 1.0], ["1", 2000, 2000, 2.0], ["2", 2600, 2500, 9.0], ["1", 2999, 2000, 2.0]]


def test_no_feature_value_comes_from_after_launch():
    """Leakage check: poison every sample of a task's executor taken after its launch; its row must not change."""
    tasks, samples = telemetry(seconds=120)
    joined = attach_snapshots(tasks, samples, max_age_ms=2000).set_index("taskId")
    assert (joined["sampleTime"] <= joined["launchTime"]).all()
    assert (joined["launchTime"] - joined["sampleTime"] <= 2000).all()
    for _, task in tasks.sample(20, random_state=1).iterrows():
        poisoned = samples.copy()
        later = (poisoned["executorId"] == task["executorId"]) & (poisoned["time"] > task["launchTime"])
        poisoned.loc[later, ["load1", "cgroupThrottledPct"]] = 1e9
        again = attach_snapshots(tasks, poisoned, max_age_ms=2000).set_index("taskId")
        assert again.loc[task["taskId"]].equals(joined.loc[task["taskId"]])
    assert build_dataset(tasks, samples, max_age_ms=2000).X.shape == (len(joined), 4)


def test_stale_samples_are_not_used_and_rows_are_in_launch_order():
    samples = nodes([("1", 1000, 1.0)])
    tasks = pd.DataFrame({"executorId": ["1", "1"], "launchTime": [5000, 2500]})
    assert attach_snapshots(tasks, samples, max_age_ms=2000)["launchTime"].tolist() == [2500]
    t, n = telemetry(seconds=60)
    a = build_dataset(t, n, max_age_ms=2000)
    both = concat([a.take(slice(len(a) // 2, None)), a.take(slice(0, len(a) // 2))])
    assert np.all(np.diff(both.launch_times) >= 0) and len(both) == len(a)
