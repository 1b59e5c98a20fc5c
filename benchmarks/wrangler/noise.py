"""A noisy neighbour for one executor: bursts of CPU starvation at seeded random times.

Preferred: the cgroup-v1 ``cpu`` controller (root): the victim JVM is moved into its own group whose
``cpu.cfs_quota_us`` drops to a small share of one core during a burst and is lifted after it, as a
co-located tenant under a CPU limit would experience. Without that controller (no root, cgroup v2 only
and not delegated, macOS) it falls back to duty-cycling the process with SIGSTOP/SIGCONT, which starves
it the same way but is invisible to its cgroup counters; :func:`unavailable_reason` says which applies.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from pathlib import Path

CPU_CGROUP = Path("/sys/fs/cgroup/cpu")
PERIOD_US = 100_000


def unavailable_reason() -> str | None:
    """Why the cgroup quota cannot be used here (then signals are used), or ``None``."""
    if os.geteuid() != 0:
        return "needs root to create a cpu cgroup"
    if not (CPU_CGROUP / "cpu.cfs_quota_us").exists():
        return f"no cgroup-v1 cpu controller at {CPU_CGROUP}"
    return None


def burst_schedule(seed: int, seconds: float, *, mean_gap: float = 8.0, min_len: float = 3.0,
                   max_len: float = 8.0) -> list[tuple[float, float]]:
    """Seeded ``(start, end)`` offsets in seconds: exponential gaps, uniform burst lengths."""
    rng, out, t = random.Random(seed), [], 0.0
    while True:
        t += rng.expovariate(1 / mean_gap)
        length = rng.uniform(min_len, max_len)
        if t >= seconds:
            return out
        out.append((t, min(seconds, t + length)))
        t += length


class NoisyNeighbour:
    """Starves ``pid`` to ``share`` of one core during each burst of ``schedule``, from :meth:`start` on.

    Use as a context manager; leaving it ends any burst and moves the process back.
    """

    def __init__(self, pid: int, schedule, *, share: float = 0.1, name: str = "sparkrm-wrangler-noisy"):
        self.pid, self.schedule, self.share = pid, list(schedule), share
        self.method_ = "cgroup" if unavailable_reason() is None else "signals"
        self.group = CPU_CGROUP / name
        self._stop = threading.Event()
        self._thread = None
        #: Absolute (start, end) epoch-ms of the bursts actually applied.
        self.bursts_: list[tuple[int, int]] = []

    def __enter__(self):
        if self.method_ == "cgroup":
            self.group.mkdir(exist_ok=True)
            (self.group / "cpu.cfs_period_us").write_text(f"{PERIOD_US}\n")
            (self.group / "cpu.cfs_quota_us").write_text("-1\n")
            (self.group / "cgroup.procs").write_text(f"{self.pid}\n")
        return self

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="noisy-neighbour", daemon=True)
        self._thread.start()

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._normal()
        if self.method_ == "cgroup":
            try:
                (CPU_CGROUP / "cgroup.procs").write_text(f"{self.pid}\n")
                self.group.rmdir()
            except OSError:
                pass  # the executor has exited; the group goes when it is empty
        return False

    def _run(self) -> None:
        t0 = time.monotonic()
        for start, end in self.schedule:
            if self._stop.wait(max(0.0, start - (time.monotonic() - t0))):
                return
            began = int(time.time() * 1000)
            self._starve(end - (time.monotonic() - t0))
            self.bursts_.append((began, int(time.time() * 1000)))

    def _starve(self, seconds: float) -> None:
        if self.method_ == "cgroup":
            (self.group / "cpu.cfs_quota_us").write_text(f"{int(PERIOD_US * self.share)}\n")
            self._stop.wait(max(0.0, seconds))
            self._normal()
            return
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self._stop.is_set():
            self._signal(signal.SIGSTOP)
            time.sleep(0.1 * (1 - self.share))
            self._signal(signal.SIGCONT)
            time.sleep(0.1 * self.share)

    def _normal(self) -> None:
        if self.method_ == "cgroup":
            (self.group / "cpu.cfs_quota_us").write_text("-1\n")
        else:
            self._signal(signal.SIGCONT)

    def _signal(self, sig) -> None:
        try:
            os.kill(self.pid, sig)
        except ProcessLookupError:
            pass
