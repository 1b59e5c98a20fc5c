"""Synthetic telemetry for Wrangler's policy tests: node samples and tasks whose slowness follows a counter.

Executor ``"2"`` is throttled (``cgroupThrottledPct`` high) during random bursts; a task launched there
during a burst runs ``slowdown`` times longer. Everything is seeded, so labels are reproducible.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

COUNTERS = ["cpuUserPct", "load1", "cgroupThrottledPct", "procCpuPct"]


def telemetry(*, seed: int = 0, executors=("0", "1", "2"), seconds: int = 600, interval_ms: int = 1000,
              tasks_per_stage: int = 30, slowdown: float = 2.5, noisy: str = "2"):
    """Return ``(tasks, nodes)`` DataFrames shaped like telemetry ``task`` and ``node`` records."""
    rng = np.random.default_rng(seed)
    t0 = 1_700_000_000_000
    burst = rng.random(seconds) < 0.3
    burst = np.repeat(burst[::10], 10)[:seconds]  # bursts last ten seconds
    nodes = []
    for ex in executors:
        for s in range(1, seconds):
            hot = ex == noisy and burst[s]
            nodes.append({"seq": 0, "type": "node", "executorId": ex, "time": t0 + s * interval_ms,
                          "intervalMs": interval_ms, "cpuUserPct": rng.normal(60, 10),
                          "load1": rng.normal(3, 0.5) + (1.5 if hot else 0),
                          "cgroupThrottledPct": (rng.normal(70, 10) if hot else rng.normal(2, 1)),
                          "procCpuPct": rng.normal(30, 5) if hot else rng.normal(90, 5)})
    tasks, task_id = [], 0
    for stage, start in enumerate(range(2, seconds - 5, 3)):
        for i in range(tasks_per_stage):
            ex = executors[i % len(executors)]
            launch = t0 + start * interval_ms + int(rng.integers(0, interval_ms))
            hot = ex == noisy and burst[start]
            duration = rng.normal(1000, 60) * (slowdown if hot else 1)
            tasks.append({"jobId": stage // 2, "stageId": stage, "stageAttempt": 0, "taskId": task_id, "status": "SUCCESS",
                          "executorId": ex, "launchTime": launch, "durationMs": int(duration),
                          "inputBytes": 10_000, "shuffleWriteBytes": 0})
            task_id += 1
    return pd.DataFrame(tasks), pd.DataFrame(nodes)
