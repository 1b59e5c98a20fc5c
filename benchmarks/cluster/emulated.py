"""Bring an emulated multi-host Spark standalone cluster up, describe it, and take it down.

``up`` starts a master (in this namespace, at the gateway address) and one worker per host (in the host's
namespace and cgroups, with ``SPARK_LOCAL_DIRS`` on its own capped directory), then leaves them running and
writes a state file; ``down`` reads it back and removes everything. Applications connect with the master
URL and :func:`session_conf` (the driver must bind to the gateway for executors in namespaces to reach it).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from spark_plugin.errors import NotOursError
from spark_plugin.ownership import FolderKind
from spark_plugin.standalone import StandaloneCluster, WorkerHost

from . import isolation

#: Memory an executor's JVM uses beyond its heap, and a worker's own JVM, in the host's memory limit.
EXECUTOR_OVERHEAD_MB, WORKER_MB = 640, 512


def default_dir() -> Path:
    return Path(os.environ.get("SPARKRM_CLUSTER_DIR", Path.home() / ".cache" / "sparkrm" / "cluster"))


#: The cluster's folder: its state, each host's local directory, the standalone daemons' logs and work folder.
CLUSTER_FOLDER = FolderKind("emulated cluster folder", ("state.json", "state.json.tmp", "host-*", "*.log", "work",
                                                        "*.out", "*.pid"))


class ClusterError(RuntimeError):
    """The emulated cluster cannot be brought up, or is not there."""


@dataclass
class ClusterSpec:
    """What ``up`` builds (the command line fills it)."""

    hosts: int = 3
    executors_per_host: int = 2
    executor_memory_mb: int = 1024
    cpus_per_host: float | None = None  # default: this machine's CPUs shared out among the hosts
    iops: int = 500  # read and write IOPS per host's local disk; 0: uncapped
    isolate: bool = True  # False: loopback addresses and no cgroups, whatever this machine allows
    apps: int = 3  # applications that can each hold its executors at once (the TPC-H harness: one per mode)

    def cpus(self) -> float:
        return self.cpus_per_host or round((os.cpu_count() or 1) / self.hosts, 2)

    def slots(self) -> int:
        """Executors a worker can hold: ``executors_per_host`` for each of ``apps`` applications. They share
        the host's CPU quota and memory limit, as tenants of one real host do."""
        return self.executors_per_host * self.apps

    def memory_mb(self) -> int:
        return self.slots() * (self.executor_memory_mb + EXECUTOR_OVERHEAD_MB) + WORKER_MB


def up(spec: ClusterSpec, directory: Path | None = None, log=print) -> dict:
    """Start the cluster; return its state (also written to ``directory/state.json``)."""
    directory = directory or default_dir()
    if (directory / "state.json").exists():
        raise ClusterError(f"a cluster is already up (state in {directory / 'state.json'}); run "
                           "`python -m benchmarks.cluster down` first.")
    if min(spec.hosts, spec.executors_per_host, spec.apps) < 1 or spec.iops < 0:
        raise ClusterError("--hosts, --executors-per-host and --apps must be >= 1, and --iops >= 0.")
    net_reason = isolation.network_unavailable_reason() if spec.isolate else "isolation switched off"
    cg_reasons = isolation.cgroup_unavailable_reasons() if spec.isolate else {
        c: "isolation switched off" for c in isolation.GROUPS}
    use_netns = net_reason is None
    log(f"network: {'a namespace per host' if use_netns else f'loopback addresses ({net_reason})'}")
    for c in isolation.GROUPS:
        log(f"cgroup {c}: {'per host' if c not in cg_reasons else f'none ({cg_reasons[c]})'}")
    try:
        CLUSTER_FOLDER.claim(directory, what="the cluster folder")
    except NotOursError as e:
        raise ClusterError(f"{e} (or set SPARKRM_CLUSTER_DIR to another folder)") from None
    hosts = []
    for i in range(spec.hosts):
        local = directory / f"host-{i}" / "local"
        local.mkdir(parents=True, exist_ok=True)
        hosts.append(isolation.HostSpec(i, isolation.host_address(i, use_netns),
                                        f"sparkrm-host-{i}" if use_netns else None, {}, str(local)))
    state = {"spec": asdict(spec), "directory": str(directory), "hosts": [asdict(h) for h in hosts],
             "gateway": isolation.gateway(use_netns), "network": "netns" if use_netns else "loopback",
             "skipped": {"network": net_reason, **cg_reasons}}
    _write_state(directory, state)  # first, so that `down` cleans up after a failed start too
    try:
        if use_netns:
            isolation.create_network(hosts)
        controllers = [c for c in isolation.GROUPS if c not in cg_reasons]
        for h in hosts:
            h.cgroups = isolation.create_cgroups(h.index, controllers, cpus=spec.cpus(), memory_mb=spec.memory_mb(),
                                                 iops=spec.iops, local_dir=Path(h.local_dir))
        state["hosts"] = [asdict(h) for h in hosts]
        _write_state(directory, state)
        cluster = StandaloneCluster(
            cores=spec.slots(), memory=f"{spec.slots() * spec.executor_memory_mb}m",
            master_host=state["gateway"], directory=directory,
            worker_hosts=[WorkerHost(h.address, h.launch_prefix(), {"SPARK_LOCAL_DIRS": h.local_dir},
                                     h.join_cgroups if h.cgroups else None) for h in hosts]).start()
    except Exception:
        down(directory, log=lambda _: None)
        raise
    state.update(master=cluster.url, pids=cluster.pids, ui=f"http://{state['gateway']}:{cluster.ui_port}")
    _write_state(directory, state)
    return state


def down(directory: Path | None = None, log=print) -> bool:
    """Stop every process of the cluster and remove its namespaces, bridge, groups and files.

    Returns False when there was no cluster to take down."""
    directory = directory or default_dir()
    state = read_state(directory)
    if state is None:
        log(f"no emulated cluster is up (no {directory / 'state.json'})")
        return False
    for pid in state.get("pids", []):  # the workers' executors are in their process groups
        _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    while any(_alive(p) for p in state.get("pids", [])) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in state.get("pids", []):
        _signal_group(pid, signal.SIGKILL)
    problems = isolation.teardown(state["hosts"])
    for p in problems:
        log(f"could not remove {p}")
    if CLUSTER_FOLDER.is_ours(directory):
        shutil.rmtree(directory)
    else:
        log(f"left {directory} in place: it holds files the cluster did not write")
    log("the emulated cluster is down" + (" (see above for what is left)" if problems else ""))
    return True


def read_state(directory: Path | None = None) -> dict | None:
    path = (directory or default_dir()) / "state.json"
    return json.loads(path.read_text()) if path.exists() else None


def session_conf(state: dict) -> dict[str, str]:
    """Spark settings an application needs on this cluster: the driver reachable from every host, and
    executors sized so each host runs ``executors_per_host`` of them (the master spreads an application's
    executors over the workers, so ``spark.cores.max`` of one per executor gives each host its share). The
    session starts once all of them have registered, so a benchmark sizing its work by
    ``defaultParallelism`` sees the whole cluster."""
    spec = state["spec"]
    return {"spark.driver.host": state["gateway"], "spark.driver.bindAddress": state["gateway"],
            "spark.executor.cores": "1", "spark.executor.memory": f"{spec['executor_memory_mb']}m",
            "spark.cores.max": str(spec["hosts"] * spec["executors_per_host"]),
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s"}


def conf_for_master(master: str | None) -> dict[str, str]:
    """:func:`session_conf` when ``master`` is the emulated cluster's URL that is up now, else nothing.

    Benchmarks taking ``--master`` call this, so the emulated cluster needs no further flags."""
    state = read_state()
    return session_conf(state) if state and master and state.get("master") == master else {}


def _write_state(directory: Path, state: dict) -> None:
    tmp = directory / "state.json.tmp"
    tmp.write_text(json.dumps(state, indent=1))
    tmp.replace(directory / "state.json")


def _signal_group(pid: int, sig) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs. A zombie (exited, not yet reaped) does not: a caller that ran ``up``
    in its own process is the daemons' parent, and ``os.kill(pid, 0)`` alone would wait out the grace for it."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except (OSError, IndexError):  # no /proc here: a signal 0 tells running (or zombie) from gone
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False
