"""The benchmark's pieces without Spark: the burst schedule, the summary ratios, the noisy neighbour's groups."""

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.wrangler.noise import (PERIOD_US, CpuGroup, NoisyNeighbour, burst_schedule, process_tree,
                                      unavailable_reason)
from benchmarks.wrangler.run import summarize
from tests.helpers import eventually


def test_bursts_are_seeded_ordered_disjoint_and_inside_the_window():
    a = burst_schedule(7, 300)
    assert a == burst_schedule(7, 300) and a != burst_schedule(8, 300)
    assert all(3 <= end - start <= 8 or end == 300 for start, end in a)
    assert all(prev_end < start for (_, prev_end), (start, _) in zip(a, a[1:]))
    assert a and a[-1][1] <= 300


def arm(name, jobs, task_s, queue, median_task=1.0, round=0):
    return {"arm": name, "round": round, "job_s": jobs, "stage_s": [j / 2 for j in jobs], "task_seconds": task_s,
            "speculative_attempts": 0, "queue_delay_p50_s": queue, "queue_delay_p90_s": queue,
            "median_task_s": median_task, "victim_task_fraction": 0.3, "straggler_fraction": 0.1, "holds": 0,
            "held_s": 0.0, "wall_s": sum(jobs)}


def test_summary_ratios_are_against_default_and_speculation_of_the_same_run():
    runs = [arm("default", [10, 20], 100, 0.5), arm("speculation", [10, 10], 120, 0.5),
            arm("wrangler", [5, 10], 90, 0.7)]
    s = summarize(runs, ["default", "speculation", "wrangler"])
    assert s["wrangler"]["job"]["p50"] == 7.5
    assert s["wrangler"]["vs_default"]["job_p99"] == pytest.approx(s["wrangler"]["job"]["p99"] / s["default"]["job"]["p99"])
    assert s["wrangler"]["vs_speculation"]["task_seconds"] == pytest.approx(90 / 120)
    assert s["wrangler"]["delay_overhead_pct_of_task"] == pytest.approx(20.0)
    assert s["default"]["vs_default"]["job_p99"] == 1.0


def test_round_ratios_pair_each_arm_with_the_baseline_of_the_same_round():
    runs = [arm("speculation", [10, 10], 100, 0.5, round=0), arm("wrangler", [5, 5], 50, 0.5, round=0),
            arm("speculation", [20, 20], 100, 0.5, round=1), arm("wrangler", [15, 15], 100, 0.5, round=1),
            arm("speculation", [10, 10], 100, 0.5, round=2), arm("wrangler", [7, 7], 70, 0.5, round=2)]
    r = summarize(runs, ["speculation", "wrangler"])["wrangler"]["rounds_vs_speculation"]
    assert r["job_p99"]["per_round"] == pytest.approx([0.5, 0.75, 0.7])
    assert r["task_seconds"]["per_round"] == pytest.approx([0.5, 1.0, 0.7])
    assert r["job_p99"]["mean"] == pytest.approx(0.65) and r["job_p99"]["low"] < 0.65 < r["job_p99"]["high"] < 1


CHILD = "import sys, time\nsys.stdin.readline()\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass\n"


def cpuacct_usage_ns(cpu_group) -> int:
    """CPU time used by the processes of ``cpu_group``'s twin in the ``cpuacct`` controller."""
    return int((cpu_group.parent.parent / "cpuacct" / cpu_group.name / "cpuacct.usage").read_text())


def quota(cpu_group) -> str:
    return (cpu_group / "cpu.cfs_quota_us").read_text().strip()


@pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason()))
def test_the_victims_child_processes_are_starved_and_counted_in_its_cpu_and_cpuacct_groups():
    """The first run moved only the JVM into a ``cpu`` group: its Python workers ran unthrottled and its
    usage was read from the root ``cpuacct`` group (the whole host). Here a parent with a spinning child
    stands in for the executor JVM and its pyspark worker; the child must land in both groups, under the
    burst's quota, and its CPU time be counted there. How much CPU the kernel then grants depends on the
    machine's load, so it is not asserted."""
    parent = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; subprocess.run(sys.argv[1:])",
                               sys.executable, "-c", CHILD.format(seconds=2.0)], stdin=subprocess.PIPE, text=True)
    try:
        child = eventually(lambda: process_tree(parent.pid)[1:])[0]
        with NoisyNeighbour(parent.pid, [(0.0, 10.0)], share=0.1, name=f"sparkrm-test-{parent.pid}") as noise:
            groups = {g.parent.name: g for g in noise.group_.folders_}
            assert set(process_tree(parent.pid)) == {parent.pid, child} == set(noise.pids_)
            for controller in ("cpu", "cpuacct"):
                assert f"{controller}:/sparkrm-test-{parent.pid}" in Path(f"/proc/{child}/cgroup").read_text()
            before = cpuacct_usage_ns(groups["cpu"])
            noise.start()
            eventually(lambda: quota(groups["cpu"]) == str(int(PERIOD_US * 0.1)))  # the burst is on
            parent.stdin.write("go\n")
            parent.stdin.flush()
            parent.wait(timeout=30)  # the child spins 2 s of wall time, starved to 10% of a core throughout
            assert quota(groups["cpu"]) == str(int(PERIOD_US * 0.1))
            assert cpuacct_usage_ns(groups["cpu"]) > before  # counted in the victim's group, not only the host's
        assert not any(g.exists() for g in groups.values())
    finally:
        parent.kill()


@pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason()))
def test_a_node_share_caps_a_process_outside_bursts_and_is_lifted_on_leaving():
    spinner = subprocess.Popen([sys.executable, "-c", CHILD.format(seconds=1.5)], stdin=subprocess.PIPE, text=True)
    try:
        with CpuGroup(spinner.pid, f"sparkrm-test-node-{spinner.pid}", share=0.3) as node:
            folder = next(f for f in node.folders_ if f.parent.name == "cpu")
            assert quota(folder) == str(int(PERIOD_US * 0.3))
            before = cpuacct_usage_ns(folder)
            spinner.stdin.write("go\n")
            spinner.stdin.flush()
            spinner.wait(timeout=30)  # 1.5 s of wall time at 0.3 of a core
            assert cpuacct_usage_ns(folder) > before and quota(folder) == str(int(PERIOD_US * 0.3))
        assert not folder.exists()
    finally:
        spinner.kill()


def test_burst_lengths_are_parsed_as_a_positive_range():
    from benchmarks.wrangler.run import _seconds_range

    assert _seconds_range("10,20") == (10.0, 20.0)
    for bad in ("20,10", "0,5"):
        with pytest.raises(Exception, match="MIN,MAX"):
            _seconds_range(bad)


def test_hog_levels_are_parsed_per_kind_and_an_unknown_kind_names_the_known_ones():
    from benchmarks.wrangler.run import _levels

    assert _levels("cpu=3,io=4,memory=0.97") == {"cpu": 3.0, "io": 4.0, "memory": 0.97}
    for bad in ("disk=1", "cpu"):
        with pytest.raises(Exception, match="cpu, io, memory"):
            _levels(bad)
