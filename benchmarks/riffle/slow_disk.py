"""Emulating an HDD-class disk for a benchmark: a read-IOPS cap, an I/O unit size, cold caches, and a page
cache too small to hold a shuffle (:class:`CachePressure`, which evicts the shuffle's files only).

Uses the cgroup-v1 blkio controller (``blkio.throttle.read_iops_device``), the device's
readahead (``/sys/dev/block/MAJ:MIN/queue/read_ahead_kb``) and ``/proc/sys/vm/drop_caches``,
all of which need root. Where any is missing, :func:`unavailable_reason` says why, and the
benchmark skips that part with the reason.

Why readahead: the cap counts I/O requests, and the kernel turns a small read into one request of
up to the readahead size. With a large readahead (this VM's disk has 8 MiB) the first small read
of a shuffle file pulls in the whole file, so "random small reads" never reach the disk. The
thesis's storage served 512 KiB units (spec §5.1), so the benchmark sets that for its cold phase.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

BLKIO = Path("/sys/fs/cgroup/blkio")
DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def device_of(path: str | Path) -> str:
    """``MAJOR:MINOR`` of the block device holding ``path``."""
    dev = os.stat(path).st_dev
    return f"{os.major(dev)}:{os.minor(dev)}"


def unavailable_reason(path: str | Path) -> str | None:
    """Why reads under ``path`` cannot be throttled here, or ``None`` when they can."""
    if os.geteuid() != 0:
        return "needs root (cgroup blkio and drop_caches)"
    if not (BLKIO / "blkio.throttle.read_iops_device").exists():
        return f"no cgroup-v1 blkio controller at {BLKIO}"
    if not DROP_CACHES.exists():
        return f"{DROP_CACHES} is missing"
    if os.major(os.stat(path).st_dev) == 0:
        return f"{path} is not on a block device (tmpfs?)"
    if not readahead_file(device_of(path)).exists():
        return f"{readahead_file(device_of(path))} is missing (a partition or device-mapper volume?)"
    return None


def capped_device(args, benchmark: str) -> str | None:
    """The device under ``args.local_dir`` a disk benchmark caps, or ``None`` after saying why it is skipped."""
    reason = unavailable_reason(args.local_dir)
    if reason:
        print(f"{benchmark} benchmark skipped: {reason}", file=sys.stderr)
        return None
    return device_of(args.local_dir)


def readahead_file(device: str) -> Path:
    return Path("/sys/dev/block") / device / "queue" / "read_ahead_kb"


def drop_caches() -> None:
    """Write dirty pages out and empty the page cache, so the next reads hit the disk."""
    subprocess.run(["sync"], check=True)
    DROP_CACHES.write_text("3\n")


class IopsCap:
    """A blkio cgroup whose processes may issue at most ``iops`` reads per second on one device.

    Use as a context manager around the cold phase; :meth:`add` moves processes in (all their
    threads go along), and leaving the block moves them back to the root group. While it is
    active the device's readahead is ``unit_kb`` (the previous value is restored).
    """

    def __init__(self, iops: int, device: str, unit_kb: int = 512, name: str = "sparkrm-bench"):
        self.iops, self.device, self.unit_kb = iops, device, unit_kb
        self.group = BLKIO / name
        self._pids: list[int] = []
        self._readahead = None
        #: Read requests and bytes the device served to the group, set when the block ends.
        self.reads_ = self.read_bytes_ = 0

    def __enter__(self):
        ra = readahead_file(self.device)
        self._readahead = ra.read_text().strip()
        ra.write_text(f"{self.unit_kb}\n")
        if self.group.exists():  # left over from an interrupted run: start with fresh counters
            self.group.rmdir()
        self.group.mkdir()
        (self.group / "blkio.throttle.read_iops_device").write_text(f"{self.device} {self.iops}\n")
        return self

    def add(self, pids) -> None:
        for pid in pids:
            (self.group / "cgroup.procs").write_text(f"{pid}\n")
            self._pids.append(pid)

    def __exit__(self, *exc):
        self.reads_ = self._stat("blkio.throttle.io_serviced")
        self.read_bytes_ = self._stat("blkio.throttle.io_service_bytes")
        for pid in self._pids:
            try:
                (BLKIO / "cgroup.procs").write_text(f"{pid}\n")
            except OSError:
                pass  # the process has ended
        self._pids.clear()
        readahead_file(self.device).write_text(f"{self._readahead}\n")
        (self.group / "blkio.throttle.read_iops_device").write_text(f"{self.device} 0\n")
        try:
            self.group.rmdir()
        except OSError:
            pass  # still in use by a process that has not left yet; harmless
        return False

    def _stat(self, name: str) -> int:
        """The group's ``Read`` count for our device in a blkio statistics file."""
        for line in (self.group / name).read_text().splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] == self.device and parts[1] == "Read":
                return int(parts[2])
        return 0


class CachePressure:
    """A page cache too small for the shuffle: every ``interval_s`` the files under ``directory`` (the shuffle's
    local directory) are written out and evicted from the page cache, so a file read a moment after it was
    written comes from the disk. Nothing else is evicted: jars, metadata and other files stay cached.

    Use as a context manager; the thread stops when the block ends.
    """

    def __init__(self, directory: str | Path, interval_s: float):
        self.directory, self.interval_s = Path(directory), interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="cache-pressure", daemon=True)
        #: How many passes over the directory were made, set when the block ends.
        self.passes_ = 0

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        return False

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            for path in self.directory.rglob("*"):
                evict(path)
            self.passes_ += 1


def evict(path: Path) -> None:
    """Write ``path``'s dirty pages out and drop its pages from the page cache (a file that vanished is skipped)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # a directory's entry, or deleted meanwhile
        return
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError:
        pass  # a directory or special file: nothing to evict
    finally:
        os.close(fd)
