"""What makes one emulated host different from another: its address, its CPUs, its memory, its disk.

Each mechanism is used where this machine allows it and skipped, with the reason, where it does not:

* **network**: a network namespace per host (``ip netns``, root), joined to a bridge in this namespace by a
  veth pair, so each host has its own address, its own loopback and its own ``/proc/net/dev`` counters.
  Without it each host gets a loopback address of its own (``127.0.0.2``, ...), which Spark also takes for
  a host, but whose counters are the machine's.
* **cgroups** (v1, root): per host a ``cpu`` group with a CFS quota (its CPUs), a ``cpuacct`` group (its
  usage, as Wrangler's executors read it), a ``memory`` group with a limit, and a ``blkio`` group capping
  read and write IOPS on the device of its local directory. The groups are made under the groups this
  process is in, so the hosts stay inside whatever limits this machine already puts on us.
* **pressure** (cgroup v2, root): per host a group in the v2 hierarchy, whose ``{cpu,io,memory}.pressure``
  files give the host's own pressure stall information (PSI needs no controller, so this works in hybrid
  mode too, where the v2 hierarchy carries none). Executors read it instead of the machine's ``/proc/pressure``.

Everything a host is given is named in :class:`HostSpec` and undone by :func:`teardown`, which is safe to
run twice and after a crash.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

CGROUP_V1 = Path("/sys/fs/cgroup")
CONTROLLERS = ("cpu", "cpuacct", "memory", "blkio")
#: The key of a host's v2 group in :attr:`HostSpec.cgroups`, beside the v1 controllers' names.
PRESSURE = "pressure"
#: Every group a host may have.
GROUPS = CONTROLLERS + (PRESSURE,)
GROUP = "sparkrm-cluster"
BRIDGE = "sparkrm0"
SUBNET = ipaddress.ip_network("10.213.7.0/24")
PERIOD_US = 100_000


@dataclass
class HostSpec:
    """One emulated host: what it is called, where it is reached, what it may use."""

    index: int
    address: str
    netns: str | None
    cgroups: dict[str, str]  # controller -> group folder
    local_dir: str

    @property
    def name(self) -> str:
        return f"host-{self.index}"

    def launch_prefix(self) -> list[str]:
        """Runs a command in this host's network namespace. Not ``ip netns exec``: that also remounts
        ``/sys`` in a mount namespace of its own, which hides the cgroup hierarchies executors read."""
        return ["nsenter", f"--net=/var/run/netns/{self.netns}"] if self.netns else []

    def join_cgroups(self) -> None:
        """Move the calling process into this host's groups (run in the child before it executes)."""
        for folder in self.cgroups.values():
            Path(folder, "cgroup.procs").write_text(f"{os.getpid()}\n")


def network_unavailable_reason() -> str | None:
    """Why hosts cannot have network namespaces here, or ``None`` when they can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool, package in (("ip", "iproute2"), ("nsenter", "util-linux")):
        if shutil.which(tool) is None:
            return f"the `{tool}` command ({package}) is missing"
    if not Path("/proc/self/ns/net").exists():
        return "this kernel has no network namespaces"
    return None


def cgroup_unavailable_reasons() -> dict[str, str]:
    """Per group of :data:`GROUPS`, why hosts cannot have one here (absent: they can)."""
    if os.geteuid() != 0:
        return {c: "cgroups need root" for c in GROUPS}
    reasons = {c: f"no cgroup-v1 {c} controller at {CGROUP_V1 / c}" for c in CONTROLLERS
               if not (CGROUP_V1 / c / "cgroup.procs").exists()}
    if pressure_root() is None:
        reasons[PRESSURE] = "no cgroup-v2 hierarchy to read pressure from (executors read /proc/pressure)"
    return reasons


def pressure_root() -> Path | None:
    """This process's group in the cgroup-v2 hierarchy, where hosts' pressure groups go; ``None`` without one."""
    mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()
              if line.split()[2] == "cgroup2"]
    if not mounts or os.geteuid() != 0:
        return None
    own = next((line.split(":", 2)[2] for line in Path("/proc/self/cgroup").read_text().splitlines()
                if line.startswith("0::")), "/")
    folder = Path(mounts[0]) / own.lstrip("/")
    return folder if (folder / "cgroup.procs").exists() else None


def gateway(use_netns: bool) -> str:
    """The address the master and the driver bind to: the bridge's, or loopback without namespaces."""
    return str(SUBNET.network_address + 1) if use_netns else "127.0.0.1"


def host_address(index: int, use_netns: bool) -> str:
    return str(SUBNET.network_address + 2 + index) if use_netns else f"127.0.0.{index + 2}"


def _run(*cmd: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise OSError(f"`{' '.join(cmd)}` failed: {done.stderr.strip() or done.returncode}")


def create_network(hosts: list[HostSpec]) -> None:
    """The bridge at the gateway address, and per host a namespace with a veth to it and a default route."""
    if any(ipaddress.ip_address(a["local"]) in SUBNET for a in _addresses() if a.get("family") == "inet"):
        raise OSError(f"the subnet {SUBNET} is already in use here; run `python -m benchmarks.cluster down` "
                      "or free it")
    _run("ip", "link", "add", BRIDGE, "type", "bridge")
    _run("ip", "addr", "add", f"{gateway(True)}/{SUBNET.prefixlen}", "dev", BRIDGE)
    _run("ip", "link", "set", BRIDGE, "up")
    for h in hosts:
        veth = f"sparkrm-v{h.index}"
        _run("ip", "netns", "add", h.netns)
        _run("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", h.netns)
        _run("ip", "link", "set", veth, "master", BRIDGE, "up")
        _run("ip", "-n", h.netns, "addr", "add", f"{h.address}/{SUBNET.prefixlen}", "dev", "eth0")
        _run("ip", "-n", h.netns, "link", "set", "eth0", "up")
        _run("ip", "-n", h.netns, "link", "set", "lo", "up")
        _run("ip", "-n", h.netns, "route", "add", "default", "via", gateway(True))


def _addresses() -> list[dict]:
    done = subprocess.run(["ip", "-j", "addr"], capture_output=True, text=True)
    return [a for link in json.loads(done.stdout or "[]") for a in link.get("addr_info", [])]


def own_group(controller: str) -> Path:
    """This process's group in the v1 hierarchy of ``controller`` (hosts' groups are made under it)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        if controller in names.split(","):
            return CGROUP_V1 / controller / path.lstrip("/")
    return CGROUP_V1 / controller


def create_cgroups(index: int, controllers: list[str], *, cpus: float, memory_mb: int, iops: int,
                   local_dir: Path) -> dict[str, str]:
    """This host's groups of ``controllers`` (of :data:`GROUPS`), limited: CPU quota, memory limit, read and
    write IOPS on its disk (0: no cap); the pressure group has no limit."""
    groups = {}
    for c in controllers:
        folder = (pressure_root() if c == PRESSURE else own_group(c)) / GROUP / f"host-{index}"
        folder.mkdir(parents=True, exist_ok=True)
        groups[c] = str(folder)
    if "cpu" in groups:
        Path(groups["cpu"], "cpu.cfs_period_us").write_text(f"{PERIOD_US}\n")
        Path(groups["cpu"], "cpu.cfs_quota_us").write_text(f"{int(cpus * PERIOD_US)}\n")
    if "memory" in groups:
        Path(groups["memory"], "memory.limit_in_bytes").write_text(f"{memory_mb * 2**20}\n")
    if "blkio" in groups and iops:
        dev = os.stat(local_dir).st_dev
        if os.major(dev):  # a block device (tmpfs and overlays have none to cap)
            for kind in ("read", "write"):
                Path(groups["blkio"], f"blkio.throttle.{kind}_iops_device").write_text(
                    f"{os.major(dev)}:{os.minor(dev)} {iops}\n")
    return groups


def teardown(hosts: list[dict]) -> list[str]:
    """Kill what is left in the hosts' groups, delete their namespaces, the bridge and the groups.

    Returns what could not be undone (empty when all went)."""
    problems = []
    for h in hosts:
        for folder in h["cgroups"].values():
            for pid in _procs(folder):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    deadline = time.monotonic() + 10
    for h in hosts:
        for folder in h["cgroups"].values():
            while _procs(folder) and time.monotonic() < deadline:
                time.sleep(0.1)
            try:
                if Path(folder).exists():
                    Path(folder).rmdir()
            except OSError as e:
                problems.append(f"cgroup {folder}: {e.strerror}")
        if h.get("netns"):
            done = subprocess.run(["ip", "netns", "del", h["netns"]], capture_output=True, text=True)
            if done.returncode and "No such file" not in done.stderr:
                problems.append(f"network namespace {h['netns']}: {done.stderr.strip()}")
    for parent in [own_group(c) for c in CONTROLLERS] + [pressure_root()]:
        try:
            if parent is not None:
                (parent / GROUP).rmdir()
        except OSError:
            pass  # absent, or still holding a group named above
    if any(h.get("netns") for h in hosts):
        subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True)
    return problems


def _procs(folder: str) -> list[int]:
    try:
        return [int(x) for x in Path(folder, "cgroup.procs").read_text().split()]
    except OSError:
        return []
