"""The benchmark's hogs do what they claim inside real cgroup-v1 groups (root only; skipped elsewhere)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks.wrangler.hogs import Hog
from benchmarks.wrangler.noise import HostNoise
from tests.helpers import eventually

V1 = Path("/sys/fs/cgroup")


@pytest.fixture
def group(request):
    """``group(controller)``: a fresh v1 group of that controller, removed afterwards."""
    made = []

    def make(controller: str) -> Path:
        if os.geteuid() != 0 or not (V1 / controller / "cgroup.procs").exists():
            pytest.skip(f"needs root and a cgroup-v1 {controller} controller")
        folder = V1 / controller / f"sparkrm-test-hog-{os.getpid()}"
        folder.mkdir()
        made.append(folder)
        return folder

    yield make
    for folder in made:
        folder.rmdir()


def test_the_memory_hog_fills_its_group_to_the_level_and_stays_under_the_limit(group):
    memory = group("memory")
    limit = 256 * 2**20
    (memory / "memory.limit_in_bytes").write_text(f"{limit}\n")
    with Hog("memory", 0.8, [memory], directory="/tmp", memory_group=str(memory)):
        usage = eventually(lambda: (u := int((memory / "memory.usage_in_bytes").read_text())) >= 0.7 * limit and u)
    assert 0.7 * limit <= usage <= 0.85 * limit
    assert int((memory / "memory.failcnt").read_text()) == 0  # it never pushed the group to its limit


def test_the_io_hog_issues_block_io_charged_to_its_group(group, tmp_path):
    blkio = group("blkio")
    if not os.major(os.stat(tmp_path).st_dev):
        pytest.skip(f"{tmp_path} is on no block device")
    # Recent kernels count a v1 group's block I/O only on devices with a throttle rule, as the emulated
    # hosts' disks have: a rule far above the hog's rate turns the accounting on.
    dev = os.stat(tmp_path).st_dev
    (blkio / "blkio.throttle.write_iops_device").write_text(f"{os.major(dev)}:{os.minor(dev)} 1000000\n")

    def done():
        return sum(int(line.split()[2]) for line in (blkio / "blkio.throttle.io_service_bytes").read_text().splitlines()
                   if line.split()[1:2] in (["Read"], ["Write"]))

    with Hog("io", 1, [blkio], directory=str(tmp_path)):
        eventually(lambda: done() > 4 * 2**20)


def test_the_cpu_hog_runs_level_processes_in_its_group_and_leaves_none(group):
    cpu = group("cpu")
    with Hog("cpu", 2, [cpu], directory="/tmp"):
        eventually(lambda: len((cpu / "cgroup.procs").read_text().split()) == 2)
    assert (cpu / "cgroup.procs").read_text().split() == []


def test_an_unknown_hog_is_refused_naming_the_kinds():
    with pytest.raises(ValueError, match="cpu, io, memory"):
        Hog("network", 1, [], directory="/tmp")


def test_host_noise_runs_a_hog_in_the_hosts_groups_for_each_burst_only(group):
    cpu = group("cpu")
    host = {"cgroups": {"cpu": str(cpu)}, "local_dir": "/tmp"}
    with HostNoise(host, [(0.0, 1.0), (60.0, 70.0)], {"cpu": 2}, seed=1) as noise:
        noise.start()
        eventually(lambda: len((cpu / "cgroup.procs").read_text().split()) == 2)  # in the first burst
        eventually(lambda: noise.bursts_)  # the first burst ended ...
        assert (cpu / "cgroup.procs").read_text().split() == []  # ... and its hog with it
    assert noise.kinds_ == ["cpu"] and len(noise.bursts_) == 1  # leaving stopped the schedule


def test_host_noise_gives_the_kinds_turns_so_a_short_run_meets_each(group):
    cpu = group("cpu")
    host = {"cgroups": {"cpu": str(cpu)}, "local_dir": "/tmp"}
    schedule = [(0.1 * i, 0.1 * i + 0.05) for i in range(6)]
    with HostNoise(host, schedule, {"cpu": 1, "io": 1, "memory": 0.5}, seed=3) as noise:
        noise.start()
        noise._thread.join()
    assert len(noise.kinds_) == 6 and set(noise.kinds_[:3]) == {"cpu", "io", "memory"}
    assert noise.kinds_[:3] == noise.kinds_[3:]
