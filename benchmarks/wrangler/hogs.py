"""Noisy neighbours that live inside an emulated host's own groups: a CPU hog, a disk hog, a memory hog.

This is interference the way it happens in a shared cluster: another tenant's process in the same
container (or on the same node under the same limits) takes a share of what the executor was given.
Each hog is a process (with its children) that joins the host's cgroups before it starts, so:

* ``cpu``: ``level`` busy processes share the host's CPU quota with the executor (CFS gives each about
  an equal part, so the executor keeps about ``1 / (level + 1)`` of it while it is busy);
* ``io``: ``level`` writers issue direct (``O_DIRECT``, else ``fsync``-ed) 1 MiB writes and reads in the
  host's local directory, spending the host's capped IOPS that the executor's shuffle files need;
* ``memory``: one process holds memory until the host's group is at ``level`` of its limit (re-read
  every quarter second, so it gives way when the executor grows), pushing the executor's page cache and
  mapped files out: its reads go back to the disk.

``python -m benchmarks.wrangler.hogs KIND --level L --dir D [--memory-group G]`` runs one until it is
terminated; :class:`Hog` starts and stops one in a host's groups.
"""

from __future__ import annotations

import argparse
import mmap
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

KINDS = ("cpu", "io", "memory")
CHUNK = 8 * 2**20
BLOCK = 2**20


class Hog:
    """One hog of ``kind`` at ``level`` in the groups ``folders`` (cgroup folders, v1 or v2).

    Use as a context manager: entering starts it (in a session of its own, so that leaving ends its
    children too), leaving terminates it and waits.
    """

    def __init__(self, kind: str, level: float, folders, *, directory: str, memory_group: str | None = None):
        if kind not in KINDS:
            raise ValueError(f"unknown hog {kind!r}; choose one of {', '.join(KINDS)}")
        self.kind, self.level, self.folders = kind, level, list(folders)
        self.directory, self.memory_group = directory, memory_group
        self.process_ = None

    def __enter__(self) -> "Hog":
        cmd = [sys.executable, "-m", "benchmarks.wrangler.hogs", self.kind, "--level", str(self.level),
               "--dir", self.directory]
        if self.memory_group:
            cmd += ["--memory-group", self.memory_group]
        self.process_ = subprocess.Popen(cmd, preexec_fn=self._join, start_new_session=True,
                                         cwd=Path(__file__).resolve().parents[2])
        return self

    def __exit__(self, *exc):
        try:
            os.killpg(self.process_.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process_.wait()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # its forked children are reaped by init, a moment later
            try:
                os.killpg(self.process_.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.02)
        return False

    def _join(self) -> None:
        for folder in self.folders:
            Path(folder, "cgroup.procs").write_text(f"{os.getpid()}\n")


def spin() -> None:
    while True:
        pass


def churn_disk(directory: Path) -> None:
    """Direct 1 MiB writes over a 64 MiB file and direct reads back, forever (the file stays in the host's
    local directory, which goes with the cluster)."""
    buffer = mmap.mmap(-1, BLOCK)  # page-aligned, as O_DIRECT needs
    buffer.write(os.urandom(BLOCK))
    path = directory / f"hog-io-{os.getpid()}"
    try:
        fd, direct = os.open(path, os.O_RDWR | os.O_CREAT | os.O_DIRECT, 0o600), True
    except OSError:  # a file system without direct I/O (tmpfs): synced writes instead
        fd, direct = os.open(path, os.O_RDWR | os.O_CREAT, 0o600), False
    while True:
        for i in range(64):
            os.pwritev(fd, [buffer], i * BLOCK)
            if not direct:
                os.fsync(fd)
        for i in range(64):
            os.preadv(fd, [buffer], i * BLOCK)


def hold_memory(group: Path, level: float) -> None:
    """Keep the group's usage near ``level`` of its limit by holding (and touching) 8 MiB chunks."""
    limit = int((group / "memory.limit_in_bytes").read_text())
    chunks: list[bytes] = []
    while True:
        usage = int((group / "memory.usage_in_bytes").read_text())
        want = int(level * limit) - usage
        if want > CHUNK:  # grow a few chunks at a time, so the kernel reclaims the page cache gradually
            chunks.extend(b"\x01" * CHUNK for _ in range(min(8, want // CHUNK)))
        elif want < 0 and chunks:  # give way at once when the executor grows
            del chunks[-min(len(chunks), -want // CHUNK + 1):]
        else:
            time.sleep(0.25)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.wrangler.hogs", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("--level", type=float, required=True,
                        help="cpu and io: processes; memory: the fraction of the group's limit to fill")
    parser.add_argument("--dir", type=Path, default=Path("."), help="where the io hog writes")
    parser.add_argument("--memory-group", type=Path, help="the v1 memory group whose limit the memory hog fills")
    opts = parser.parse_args(argv)
    if opts.kind == "memory":
        if opts.memory_group is None:
            parser.error("the memory hog needs --memory-group (the host's v1 memory group folder)")
        hold_memory(opts.memory_group, opts.level)
    for _ in range(max(1, int(opts.level)) - 1):
        if os.fork() == 0:
            break  # each child works as its parent does; the session is killed as one
    if opts.kind == "cpu":
        spin()
    churn_disk(opts.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
