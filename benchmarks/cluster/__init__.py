"""An emulated multi-host Spark cluster on one machine (``python -m benchmarks.cluster up``).

Each host is a standalone worker with its own address (a network namespace where root allows, else a
loopback address), its own CPU quota and memory limit, and its own local directory with an IOPS cap
(cgroup v1), so what differs between hosts on a real cluster (host-local shuffle reads, per-node
counters, executors moving between applications) is exercised here. :mod:`.isolation` builds the hosts,
:mod:`.emulated` runs the cluster; benchmarks call :func:`conf_for_master` to connect to it.
"""

from .emulated import ClusterError, ClusterSpec, conf_for_master, down, read_state, session_conf, up

__all__ = ["ClusterError", "ClusterSpec", "conf_for_master", "down", "read_state", "session_conf", "up"]
