"""The emulated multi-host cluster: hosts really apart, Riffle exact and safe across them, nothing left after.

One cluster of two hosts, two executors each, serves the module (``up`` takes 10-20 s). What the machine
allows decides the isolation (namespaces and cgroups as root, loopback addresses otherwise); the tests
check whichever was built, and that ``up`` said which was skipped.
"""

from __future__ import annotations

import math
import os
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import spark_plugin
from benchmarks.cluster import ClusterError, ClusterSpec, down, session_conf, up
from benchmarks.cluster.isolation import BRIDGE
from benchmarks.common import stop_and_clean
from benchmarks.wrangler.hogs import Hog
from tests.helpers import eventually
from tests.helpers import executor_ids
from tests.shuffle_merge import merged_files
from tests.shuffle_merge.corruption import RIFFLE_CONF, assert_read_from_originals_without_recomputation, \
    read_again_after
from tests.shuffle_merge.workloads import WORKLOADS

pytestmark = pytest.mark.spark

HOSTS = 2
EXECUTORS_PER_HOST = 2
#: Wrangler's node samples every half second, and no model trained: its counters are what is tested here.
WRANGLER_SAMPLES_ONLY = {"spark.wrangler.interval": "500ms", "spark.wrangler.train.warmup": "1h"}


def _bridge_exists() -> bool:
    return subprocess.run(["ip", "link", "show", BRIDGE], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def names_from_hosts_file(tmp_path_factory):
    """Every JVM started meanwhile resolves names from a copy of ``/etc/hosts`` only, never asking DNS.

    A Spark JVM looks its own address's name up as it starts (``Utils.localCanonicalHostName``). In a host's
    network namespace the machine's DNS server lies beyond the bridge, which forwards nothing, so each worker and
    executor waited out the resolver's timeouts (10 s) before getting the address back as its name: 20 of the
    30 s the cluster took to come up. A name the hosts file lacks now fails at once, with the same outcome.
    """
    hosts = tmp_path_factory.mktemp("names") / "hosts"
    hosts.write_text(Path("/etc/hosts").read_text() if Path("/etc/hosts").exists() else "127.0.0.1 localhost\n")
    patch = pytest.MonkeyPatch()
    patch.setenv("JAVA_TOOL_OPTIONS",
                 f"{os.environ.get('JAVA_TOOL_OPTIONS', '')} -Djdk.net.hosts.file={hosts}".strip())
    yield
    patch.undo()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, vanilla_results, names_from_hosts_file):
    """The module's cluster, brought up once the vanilla oracle (a Spark application of its own, which later tests
    compare with) is computed, rather than idling meanwhile, its executors heart-beating and sampling on the
    same CPUs."""
    if os.geteuid() == 0 and _bridge_exists():
        pytest.skip(f"an emulated cluster is already up on this machine (bridge {BRIDGE}); take it down first")
    directory = tmp_path_factory.mktemp("cluster")
    state = up(ClusterSpec(hosts=HOSTS, executors_per_host=EXECUTORS_PER_HOST, executor_memory_mb=640,
                          iops=2000, apps=1), directory, log=lambda _: None)
    yield state
    down(directory, log=lambda _: None)


@pytest.fixture(scope="module")
def spark(cluster):
    conf = {k: v for k, v in RIFFLE_CONF.items() if k != "spark.local.dir"}  # each host has its own
    session = spark_plugin.session(cluster["master"], ["telemetry", "riffle", "wrangler"], app_name="emulated-cluster",
                                   conf={**session_conf(cluster), **conf, **WRANGLER_SAMPLES_ONLY})
    app_id = session.sparkContext.applicationId
    eventually(lambda: len(executor_ids(session)) == HOSTS * EXECUTORS_PER_HOST, timeout=90)
    yield session
    stop_and_clean(session, app_id)


@pytest.fixture(scope="module")
def tm(spark):
    return spark_plugin.telemetry(spark)


def test_without_isolation_each_host_is_a_loopback_address_and_up_says_so(tmp_path):
    """First in the module, so before its cluster is up (the fixture starts at the first test that asks for it):
    the two clusters would only slow each other down."""
    state = up(ClusterSpec(hosts=2, executors_per_host=1, isolate=False, apps=1), tmp_path / "plain", log=lambda _: None)
    try:
        assert [h["address"] for h in state["hosts"]] == ["127.0.0.2", "127.0.0.3"]
        assert state["network"] == "loopback" and state["master"].startswith("spark://127.0.0.1:")
        assert all(not h["cgroups"] and h["netns"] is None for h in state["hosts"])
        assert set(state["skipped"].values()) == {"isolation switched off"}
        assert session_conf(state)["spark.driver.host"] == "127.0.0.1"
    finally:
        assert down(tmp_path / "plain", log=lambda _: None)


def where_tasks_run(spark) -> dict[str, dict]:
    """Per host address a task ran at: its network namespace, cgroup paths and CPU quota, read by the task."""
    def probe(_):
        import socket

        groups = dict(line.split(":", 2)[1:] for line in Path("/proc/self/cgroup").read_text().splitlines())
        quota = Path("/sys/fs/cgroup/cpu", groups.get("cpu", "/").lstrip("/"), "cpu.cfs_quota_us")
        yield (os.environ.get("SPARK_LOCAL_IP") or socket.gethostname(),
               {"netns": os.readlink("/proc/self/ns/net"), "cgroups": groups,
                "quota_us": int(quota.read_text()) if quota.exists() else None})
    return dict(spark.sparkContext.parallelize(range(8), 8).mapPartitions(probe).collect())


def test_each_host_has_its_own_address_network_and_limits(spark, cluster):
    seen = where_tasks_run(spark)
    assert sorted(seen) == sorted(h["address"] for h in cluster["hosts"])
    if cluster["network"] == "netns":
        namespaces = {s["netns"] for s in seen.values()}
        assert len(namespaces) == HOSTS and os.readlink("/proc/self/ns/net") not in namespaces
    else:
        assert cluster["skipped"]["network"]  # it said why
    for h in cluster["hosts"]:
        for controller in ("cpu", "memory", "blkio"):
            if controller in h["cgroups"]:
                assert seen[h["address"]]["cgroups"][controller].endswith(f"/host-{h['index']}")
            else:
                assert cluster["skipped"][controller]
        if "cpu" in h["cgroups"]:
            assert seen[h["address"]]["quota_us"] == int(ClusterSpec(**cluster["spec"]).cpus() * 100_000)


#: A DataFrame's rows read in ranges of partitions that adaptive execution coalesced (df_join's aggregation),
#: and read a partition at a time, each row in its own partition (df_repartition). A PySpark RDD's pickled
#: pairs, the third way a reducer reads merged blocks, are the next test's (PySpark sorts and aggregates in
#: Python, so its JVM shuffles have no ordering or aggregator: rdd_sort_by_key reads as rdd_reduce_by_key does).
#: The Riffle suite runs every workload.
ACROSS_HOSTS = ["df_join", "df_repartition"]


@pytest.mark.parametrize("name", ACROSS_HOSTS)
def test_riffle_across_hosts_gives_vanilla_results(spark, tm, vanilla_results, name):
    mark = tm.mark()
    assert WORKLOADS[name](spark) == vanilla_results[name]
    reads = tm.records(since=mark)["shuffle_read"].to_pylist()
    assert sum(r["mergedBlocks"] for r in reads) > 0 and sum(r["fallbacks"] for r in reads) == 0


def test_riffle_merges_the_executors_of_each_host_together_and_gives_vanilla_results(spark, tm, vanilla_results):
    """rdd_reduce_by_key: one shuffle of 12 maps over both hosts' four executors."""
    mark = tm.mark()
    assert WORKLOADS["rdd_reduce_by_key"](spark) == vanilla_results["rdd_reduce_by_key"]
    records = tm.records(since=mark)
    maps = [t for t in records["task"].to_pylist() if t["taskType"] == "ShuffleMapTask"]
    host_of = {t["partition"]: t["host"] for t in maps}
    writer = {t["partition"]: t["executorId"] for t in maps}
    merges = records["merge"].to_pylist()
    assert merges and all(m["scope"] == "host" and len({host_of[i] for i in m["mapIndexes"]}) == 1 for m in merges)
    assert any(len({writer[i] for i in m["mapIndexes"]}) > 1 for m in merges)  # a neighbour's files were read
    fan_in = int(RIFFLE_CONF["spark.riffle.merge.fanIn"])
    expected = sum(math.ceil(n / fan_in) for n in Counter(host_of.values()).values())
    reads = records["shuffle_read"].to_pylist()
    assert all(r["mergedBlocks"] + r["originalBlocks"] == expected for r in reads)
    assert sum(r["mergedBlocks"] for r in reads) > 0 and sum(r["fallbacks"] for r in reads) == 0


def test_a_damaged_merged_file_on_one_host_is_read_from_the_originals(spark, tm, cluster):
    records, _, _ = read_again_after(spark, tm, Path(cluster["directory"]), "rdd",
                                     lambda path: merged_files.damage(path, "middle"))
    assert_read_from_originals_without_recomputation(records, some_merged_used=True)


def test_wrangler_sees_network_traffic_only_on_the_host_that_sends_it(spark, tm, cluster):
    if cluster["network"] != "netns":
        pytest.skip(f"hosts share this machine's network counters here: {cluster['skipped']['network']}")
    busy, quiet = cluster["hosts"][0], cluster["hosts"][1]
    executors = {e["executorId"]: e["host"] for e in tm.executors().to_pylist() if e.get("host")}
    start_ms = time.time() * 1000
    send_from(busy["netns"], cluster["gateway"], megabytes=300)
    end_ms = time.time() * 1000
    time.sleep(1.5)  # the next samples cover the transfer's end

    def rates(host):
        n = tm.records()["node"].to_pandas()
        n = n[n["executorId"].map(executors) == host["address"]]
        return n[(n["time"] >= start_ms) & (n["time"] <= end_ms + 1500)]["netTxBytesPerS"]

    busy_rates = eventually(lambda: [r] if len(r := rates(busy)) else None)[0]
    quiet_rates = rates(quiet)
    assert len(quiet_rates) > 0
    assert busy_rates.max() > 20 * 2**20 and quiet_rates.max() < busy_rates.max() / 10


def test_wrangler_reads_each_hosts_own_container_counters(spark, tm, cluster):
    busy, quiet = cluster["hosts"][0], cluster["hosts"][1]
    if "cpu" not in busy["cgroups"] or "memory" not in busy["cgroups"]:
        pytest.skip(f"hosts have no cpu or memory group here: {cluster['skipped']}")
    host_of = {e["executorId"]: e["host"] for e in tm.executors().to_pylist() if e["event"] == "added"}
    start_ms = time.time() * 1000
    with Hog("cpu", 3, busy["cgroups"].values(), directory=busy["local_dir"]):
        time.sleep(4)
    end_ms = time.time() * 1000

    def samples_past_the_end():
        """The node samples, once every executor of both hosts has sent one from after the hog's end: then all of
        the window's are in."""
        n = tm.records()["node"].to_pandas()
        n = n.assign(host=n["executorId"].map(host_of))
        latest = n.groupby("executorId")["time"].max()
        ours = [e for e, h in host_of.items() if h in (busy["address"], quiet["address"])]
        return [n] if all(latest.get(e, 0) > end_ms for e in ours) else None

    nodes = eventually(samples_past_the_end, timeout=60)[0]  # not a fixed 1.5 s sleep

    def during(host):
        n = nodes[nodes["host"] == host["address"]]
        return n[(n["time"] >= start_ms + 1000) & (n["time"] <= end_ms)]

    hot = during(busy)
    assert len(hot) >= 2, hot
    cold = during(quiet)
    # the hog shares the busy host's group: its executors read the group's CPU use, the quiet host's do not
    # (throttling shows too on an idle machine, but not where other work keeps the hog under its quota).
    # Judged on the upper quartile of the samples: on a loaded machine the hog's own start or end can take
    # a second of the window (CI of 2ad49c6: samples at 31-48% then four at 1%). Judged against the quiet
    # host, not an absolute level: with the machine's two cores busy, the hog got 26% of its quota (CI of ab7154b).
    assert busiest(hot["cgroupCpuPct"]) > busiest(cold["cgroupCpuPct"]) + 20
    assert cold["cgroupThrottledMsPerS"].max() < 20
    # memory is read against the host's own limit
    limit = ClusterSpec(**cluster["spec"]).memory_mb() * 2**20
    assert np.allclose(hot["cgroupMemUsedBytes"] / (hot["cgroupMemUsedPct"] / 100), limit, rtol=1e-6)
    assert hot[["cgroupIoReadBytesPerS", "cgroupIoWriteBytesPerS"]].notna().all().all()
    if Path("/proc/pressure/cpu").exists() or "pressure" in busy["cgroups"]:
        assert hot["psiCpuSomePct"].between(0, 100).all()
    if "pressure" in busy["cgroups"]:  # the host's own stalls, not the machine's
        assert busiest(hot["psiCpuSomePct"]) > busiest(cold["psiCpuSomePct"]) + 5


def busiest(readings):
    """The level a counter held over the busier part of a window (its upper quartile)."""
    return readings.quantile(0.75)


def send_from(netns: str, address: str, *, megabytes: int) -> None:
    """Send ``megabytes`` from a process in network namespace ``netns`` to a listener here at ``address``."""
    with socket.create_server((address, 0)) as server:
        port = server.getsockname()[1]
        sender = subprocess.Popen(["nsenter", f"--net=/var/run/netns/{netns}", sys.executable, "-c",
                                   "import socket; s = socket.create_connection(('%s', %d)); "
                                   "[s.sendall(bytes(2**20)) for _ in range(%d)]; s.close()"
                                   % (address, port, megabytes)])
        conn, _ = server.accept()
        with conn:
            while conn.recv(2**20):
                pass
        assert sender.wait(timeout=60) == 0


def test_a_second_up_is_refused_while_one_is_up(cluster):
    with pytest.raises(ClusterError, match="already up"):
        up(ClusterSpec(hosts=1), Path(cluster["directory"]), log=lambda _: None)


def test_down_removes_every_process_namespace_group_and_file(spark, cluster):
    directory = Path(cluster["directory"])
    pids = cluster["pids"]
    assert down(directory, log=lambda _: None)
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    assert not directory.exists()
    for h in cluster["hosts"]:
        assert all(not Path(folder).exists() for folder in h["cgroups"].values())
        if h["netns"]:
            assert not Path("/var/run/netns", h["netns"]).exists()
    if cluster["network"] == "netns":
        assert not _bridge_exists()
    assert not down(directory, log=lambda _: None)  # twice is harmless
