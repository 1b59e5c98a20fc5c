"""Jobs with real slowness on a chosen executor of a local-cluster, and what telemetry says of holds.

A task finds the executor JVM it runs under among its ancestor processes, so "slow on executor 1" needs
no mock: the task sleeps longer there.
"""

import json
import os
import threading
import time
from pathlib import Path


def steady_jobs(spark, seconds: float, *, slow_pid: int | None = None, task_s: float = 0.2, slowdown: float = 4.0):
    """Jobs of 30 sleeping tasks, back to back for ``seconds``; tasks under JVM ``slow_pid`` sleep ``slowdown`` x longer.

    Returns the list of job results, each of which must be the exact sum of squares.
    """
    def task(x):
        pid, ancestors = os.getpid(), set()
        while pid > 1:
            ancestors.add(pid)
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        time.sleep(task_s * (slowdown if slow_pid in ancestors else 1.0))
        return x * x

    results, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline:
        results.append(spark.sparkContext.parallelize(range(30), 30).map(task).sum())
    return results


def in_background(fn):
    out = {}
    thread = threading.Thread(target=lambda: out.setdefault("value", fn()))
    thread.start()
    return thread, out


def launches_inside(tasks, holds) -> list:
    """``(taskId, launchTime)`` of every task launched on an executor while it was held: must be none."""
    return [(t["taskId"], t["launchTime"]) for t in tasks for h in holds
            if t["executorId"] == h["executorId"] and h["startTime"] < t["launchTime"] < h["endTime"]]


def holds_only_session(master: str, **conf) -> dict:
    """A ``SPARK_SESSION`` for tests of the hold mechanism: long holds, no guard, no online training."""
    return dict(master=master, features=["wrangler"],
                conf={"spark.wrangler.interval": "200ms", "spark.wrangler.hold.maxDuration": "60s",
                      "spark.wrangler.train.warmup": "1h", "spark.sparkrm.telemetry.dir": "{session_dir}/telemetry",
                      "spark.wrangler.guard.enabled": "false", **conf})


def flag_model(path: Path, *executors: str) -> Path:
    """A JSON model that flags ``executors`` (confidence ~1, each by its own per-node model) and no other."""
    never = {"weights": [0.0], "intercept": -1.0, "sigmoids": [[-10.0, 0.0]]}
    path.write_text(json.dumps({
        "format": "sparkrm-wrangler-model", "features": ["cpuIdlePct"], "scaler": {"scale": [0.01], "offset": [0.0]},
        "shared": {**never, "nodes": {}, "workloads": {}},
        "nodes": {ex: {**never, "intercept": 1.0} for ex in executors}}))
    return path
