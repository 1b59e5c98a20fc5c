"""Noisy neighbours: bursts of CPU starvation of one executor at seeded random times, or (:class:`HostNoise`)
bursts of hogs inside an emulated host's own groups.

Preferred: the cgroup-v1 ``cpu`` controller (root): the victim executor is moved into its own group whose
``cpu.cfs_quota_us`` drops to a small share of one core during a burst and is lifted after it, as a
co-located tenant under a CPU limit would experience. Without that controller (no root, cgroup v2 only
and not delegated, macOS) it falls back to duty-cycling the processes with SIGSTOP/SIGCONT, which starves
them the same way but is invisible to their cgroup counters; :func:`unavailable_reason` says which applies.

"The victim executor" is its whole process tree, not only the JVM: a PySpark task's CPU is spent in the
``pyspark.daemon`` worker processes the executor JVM forks, and a process moved into a cgroup does not
take its existing children along. Starving the JVM alone leaves the Python work running at full speed
and shows up in the JVM's cgroup counters only as the little CPU the JVM itself wanted (what the first
recorded run of this benchmark measured). The tree is also put into every v1 hierarchy the sampler reads
(``cpu`` for throttling, ``cpuacct`` for usage): where they are mounted apart, a victim moved in ``cpu``
only has its usage read from the root ``cpuacct`` group, that is the whole host.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from pathlib import Path

from .hogs import Hog

CGROUP_V1 = Path("/sys/fs/cgroup")
CPU_CGROUP = CGROUP_V1 / "cpu"
#: v1 hierarchies the victim joins: ``cpu`` (quota, throttling) and ``cpuacct`` (usage), as read by the
#: executor's ``CgroupCpu``. Co-mounted (``cpu,cpuacct``) they resolve to one folder, joined once.
CONTROLLERS = ("cpu", "cpuacct")
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


def process_tree(pid: int) -> list[int]:
    """``pid`` and its live descendants (for an executor: the JVM, the pyspark daemon and its workers).

    Examples
    --------
    >>> process_tree(os.getpid())[0] == os.getpid()
    True
    """
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # exited while listing
        # the command name may hold spaces and parentheses; the fields after its last ")" are fixed
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(children.get(current, ()))
    return out


class CpuGroup:
    """The process tree of ``pid`` in its own cgroup-v1 ``cpu`` and ``cpuacct`` groups, under a quota.

    Use as a context manager: entering creates the groups and moves the tree in (workers forked later
    inherit them), leaving moves every process of the groups back to their parents and removes them.
    ``share`` is the quota in cores; ``None`` is no limit.

    Attributes
    ----------
    folders_ : list of pathlib.Path
        One group folder per hierarchy (one when ``cpu`` and ``cpuacct`` are co-mounted).
    pids_ : list of int
        The processes moved by the latest :meth:`adopt`.
    """

    def __init__(self, pid: int, name: str, share: float | None = None):
        self.pid, self.name, self.share = pid, name, share
        self.folders_: list[Path] = []
        self.pids_: list[int] = []

    def __enter__(self) -> "CpuGroup":
        folders = {(CGROUP_V1 / c).resolve() for c in CONTROLLERS if (CGROUP_V1 / c).is_dir()}
        self.folders_ = sorted(folder / self.name for folder in folders)
        for folder in self.folders_:
            folder.mkdir(exist_ok=True)
        (CPU_CGROUP / self.name / "cpu.cfs_period_us").write_text(f"{PERIOD_US}\n")
        self.set_share(self.share)
        self.adopt()
        return self

    def __exit__(self, *exc):
        self.set_share(None)
        for folder in self.folders_:
            for pid in (folder / "cgroup.procs").read_text().split():
                _move(int(pid), folder.parent)
            try:
                folder.rmdir()
            except OSError:
                pass  # a process entered meanwhile; the group goes when it is empty
        return False

    def adopt(self) -> None:
        """Move the current process tree in (cheap; catches a pyspark daemon the JVM restarted)."""
        self.pids_ = process_tree(self.pid)
        for folder in self.folders_:
            for pid in self.pids_:
                _move(pid, folder)

    def set_share(self, share: float | None) -> None:
        quota = -1 if share is None else int(PERIOD_US * share)
        (CPU_CGROUP / self.name / "cpu.cfs_quota_us").write_text(f"{quota}\n")


class Bursts:
    """Runs ``schedule`` (seconds since :meth:`start`) on a thread of its own: :meth:`_burst` for each burst.

    Subclasses say what a burst does; this class keeps the timing, records ``bursts_`` (absolute (start,
    end) epoch-ms of the bursts actually run) and, on leaving the context, stops the schedule and waits
    for any burst in progress to end.
    """

    def __init__(self, schedule):
        self.schedule = list(schedule)
        self._stop = threading.Event()
        self._thread = None
        self.bursts_: list[tuple[int, int]] = []

    def __enter__(self):
        return self

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=type(self).__name__, daemon=True)
        self._thread.start()

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        return False

    def _run(self) -> None:
        t0 = time.monotonic()
        for start, end in self.schedule:
            if self._stop.wait(max(0.0, start - (time.monotonic() - t0))):
                return
            began = int(time.time() * 1000)
            self._burst(end - (time.monotonic() - t0))
            self.bursts_.append((began, int(time.time() * 1000)))

    def _burst(self, seconds: float) -> None:
        """One burst of ``seconds``; returns early once the schedule is stopped (``self._stop``)."""
        raise NotImplementedError


class NoisyNeighbour(Bursts):
    """Starves the process tree of ``pid`` to ``share`` of one core during each burst of ``schedule``.

    Use as a context manager; entering moves the tree into its :class:`CpuGroup` (at ``normal_share``,
    ``None`` = unlimited), :meth:`start` runs the schedule, leaving ends any burst and removes the group.
    ``normal_share`` needs the cgroup method.

    Attributes
    ----------
    method_ : {"cgroup", "signals"}
    group_ : CpuGroup or None
        The victim's group (``None`` with signals).
    pids_ : list of int
        The processes starved by the latest burst (or moved on entering).
    bursts_ : list of (int, int)
        Absolute (start, end) epoch-ms of the bursts actually applied.
    """

    def __init__(self, pid: int, schedule, *, share: float = 0.1, normal_share: float | None = None,
                 name: str = "sparkrm-wrangler-noisy"):
        super().__init__(schedule)
        self.pid, self.share, self.normal_share = pid, share, normal_share
        self.method_ = "cgroup" if unavailable_reason() is None else "signals"
        if normal_share is not None and self.method_ != "cgroup":
            raise RuntimeError(f"A normal CPU share needs the cgroup quota, which is unavailable: {unavailable_reason()}")
        self.group_ = CpuGroup(pid, name, normal_share) if self.method_ == "cgroup" else None
        self.pids_: list[int] = []

    def __enter__(self):
        if self.group_ is not None:
            self.group_.__enter__()
            self.pids_ = self.group_.pids_
        return self

    def __exit__(self, *exc):
        super().__exit__(*exc)
        if self.group_ is not None:
            self.group_.__exit__(*exc)
        else:
            self._signal(signal.SIGCONT)
        return False

    def _burst(self, seconds: float) -> None:
        if self.group_ is not None:
            self.group_.adopt()
            self.pids_ = self.group_.pids_
            self.group_.set_share(self.share)
            self._stop.wait(max(0.0, seconds))
            self.group_.set_share(self.normal_share)
            return
        self.pids_ = process_tree(self.pid)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self._stop.is_set():
            self._signal(signal.SIGSTOP)
            time.sleep(0.1 * (1 - self.share))
            self._signal(signal.SIGCONT)
            time.sleep(0.1 * self.share)

    def _signal(self, sig) -> None:
        for pid in self.pids_ or [self.pid]:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass


def _move(pid: int, group: Path) -> None:
    try:
        (group / "cgroup.procs").write_text(f"{pid}\n")
    except ProcessLookupError:
        pass  # exited since it was listed


class HostNoise(Bursts):
    """Bursts of hogs inside one emulated host's own groups (:mod:`.hogs`): at each burst of ``schedule`` a
    hog runs at its kind's level in ``levels`` and ends with the burst. The kinds take turns from a seeded
    first one, so that even a short application meets each kind (drawn at random, the first run's victim
    met two memory bursts and no other in every measured application).

    ``host`` is a host of :func:`benchmarks.cluster.emulated.up`'s state (its ``cgroups`` and ``local_dir``).
    Use as a context manager; :meth:`start` runs the schedule, leaving ends any hog.

    Attributes
    ----------
    bursts_ : list of (int, int)
        Absolute (start, end) epoch-ms of the bursts actually run.
    kinds_ : list of str
        The hog of each burst.
    """

    def __init__(self, host: dict, schedule, levels: dict[str, float], *, seed: int):
        super().__init__(schedule)
        self.host, self.levels = host, dict(levels)
        self.first = random.Random(seed).randrange(len(self.levels))
        self.kinds_: list[str] = []

    def _burst(self, seconds: float) -> None:
        kinds = sorted(self.levels)
        kind = kinds[(self.first + len(self.kinds_)) % len(kinds)]
        groups = self.host["cgroups"]
        with Hog(kind, self.levels[kind], groups.values(), directory=self.host["local_dir"],
                 memory_group=groups.get("memory")):
            self._stop.wait(max(0.0, seconds))
        self.kinds_.append(kind)
