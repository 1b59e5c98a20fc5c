"""A throwaway Spark standalone cluster on this machine: one Master and N Workers as child processes.

pip's pyspark ships ``bin/spark-class`` but not the ``sbin/start-*.sh`` scripts, so this starts
``org.apache.spark.deploy.master.Master`` and ``...worker.Worker`` directly. Features that need
separate applications sharing one cluster (SLAQ's cross-application coordinator) are tested and
benchmarked on it; a real cluster works the same way with its own master URL.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .errors import NotOursError, SparkrmError
from .ownership import MARKER, FolderKind

log = logging.getLogger(__name__)
#: The folder of a cluster's logs and its workers' work directories (applications' files under ``work``).
STANDALONE_FOLDER = FolderKind("standalone cluster folder", ("*.log", "work"))
#: The master's log line naming the port its web UI bound.
_UI_BOUND = re.compile(r"Bound MasterWebUI to \S+, and started at https?://[^\s:/]+:(\d+)")


def free_port() -> int:
    """A TCP port on the loopback address that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class WorkerHost:
    """Where and how one worker runs: its address, and what isolates it from the others.

    ``prefix`` goes before the worker's command (``["nsenter", "--net=/var/run/netns/ns0"]`` runs it in a
    network namespace), ``env`` is added to its environment (``SPARK_LOCAL_DIRS``: its executors' local directory),
    and ``preexec`` runs in the child before it executes (joining a cgroup, which its executors inherit).
    """

    address: str
    prefix: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    preexec: Callable[[], None] | None = None


class StandaloneCluster:
    """``with StandaloneCluster(workers=1, cores=2) as cluster: spark_plugin.session(cluster.url)``.

    Parameters
    ----------
    workers : int, default=1
        Worker processes.
    cores : int, default=2
        Cores each worker offers (may exceed the machine's: that oversubscribes it).
    memory : str, default="2g"
        Memory each worker offers to executors.
    host_per_worker : bool, default=False
        Bind worker ``i`` (and so its executors) to loopback address ``127.0.0.{i + 2}`` instead of
        ``127.0.0.1``, so Spark sees one host per worker. Spark never runs a speculative copy on the host
        of the original attempt, so speculation needs this to act on one machine at all.
    worker_hosts : list of WorkerHost, optional
        One worker per entry, each run as it says (replaces ``workers`` and ``host_per_worker``):
        ``benchmarks.cluster`` gives each its own network namespace, cgroups and local directory.
    master_host : str, default="127.0.0.1"
        Address the master binds to; workers in other network namespaces need one they can reach.
    directory : Path, optional
        Folder for logs and the workers' work directories (default: a new temporary folder, removed by
        :meth:`stop`; a given one is left in place). A given folder must be missing, empty, or already
        sparkrm's (a standalone cluster folder, or one a caller claimed such as ``benchmarks.cluster``'s):
        the logs written there would replace a user's files of the same names.
    """

    def __init__(self, workers: int = 1, cores: int = 2, memory: str = "2g", *, host_per_worker: bool = False,
                 worker_hosts: list[WorkerHost] | None = None, master_host: str = "127.0.0.1",
                 directory: Path | None = None, start_timeout_s: float = 60.0):
        if worker_hosts is not None:
            workers = len(worker_hosts)
        if workers < 1 or cores < 1:
            raise ValueError(f"workers and cores must be >= 1. Got workers={workers!r}, cores={cores!r}.")
        if host_per_worker and workers > 250:
            raise ValueError(f"host_per_worker gives each worker a 127.0.0.x address: at most 250. Got {workers}.")
        self.workers, self.cores, self.memory, self.start_timeout_s = workers, cores, memory, start_timeout_s
        self.worker_hosts = worker_hosts or [WorkerHost(f"127.0.0.{i + 2}" if host_per_worker else "127.0.0.1")
                                             for i in range(workers)]
        self.hosts = [h.address for h in self.worker_hosts]
        self.master_host = master_host
        self.port, self.ui_port = free_port(), free_port()
        self.url = f"spark://{master_host}:{self.port}"
        self._procs: list[subprocess.Popen] = []
        self._dir, self._own_dir = directory, directory is None
        if directory is not None and not _claimed(directory):
            STANDALONE_FOLDER.check_writable(directory, what="StandaloneCluster's directory")

    @property
    def pids(self) -> list[int]:
        """Process ids of the master and the workers (each leads a session of its own)."""
        return [p.pid for p in self._procs]

    def start(self) -> "StandaloneCluster":
        import pyspark

        home = Path(pyspark.__file__).parent
        if self._own_dir:
            self._dir = STANDALONE_FOLDER.claim(tempfile.mkdtemp(prefix="sparkrm-standalone-"))
        elif not _claimed(self._dir):
            self._dir = STANDALONE_FOLDER.claim(self._dir, what="StandaloneCluster's directory")
        env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOG_DIR": str(self._dir),
               "SPARK_WORKER_DIR": str(self._dir / "work")}
        spark_class = [str(home / "bin" / "spark-class")]
        self._launch(spark_class + ["org.apache.spark.deploy.master.Master", "--host", self.master_host,
                                    "--port", str(self.port), "--webui-port", str(self.ui_port)],
                     {**env, "SPARK_LOCAL_IP": self.master_host}, "master")
        worker = ["org.apache.spark.deploy.worker.Worker", "--cores", str(self.cores), "--memory", self.memory,
                  "--webui-port", "0"]
        for i, host in enumerate(self.worker_hosts):
            self._launch(host.prefix + spark_class + worker + ["--host", host.address, self.url],
                         {**env, "SPARK_LOCAL_IP": host.address, **host.env}, f"worker-{i}", host.preexec)
        self._wait_for_workers()
        return self

    def _launch(self, cmd, env, name, preexec=None) -> None:
        log = open(self._dir / f"{name}.log", "w")
        self._procs.append(subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True, preexec_fn=preexec))

    def _wait_for_workers(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self._procs):
                break
            self.ui_port = self._bound_ui_port() or self.ui_port
            try:
                with urllib.request.urlopen(f"http://{self.master_host}:{self.ui_port}/json/", timeout=2) as r:
                    if sum(w["state"] == "ALIVE" for w in json.load(r)["workers"]) == self.workers:
                        return
            except (OSError, ValueError, KeyError):
                pass  # not up yet
            time.sleep(0.3)
        logs = "\n".join(p.read_text()[-2000:] for p in sorted(self._dir.glob("*.log")))
        self.stop()
        raise SparkrmError(f"the standalone cluster did not start within {self.start_timeout_s:.0f} s "
                           f"(is Java 17 on PATH?). Master and worker logs:\n{logs}")

    def _bound_ui_port(self) -> int | None:
        """The port the master's web UI bound, as its log says. The port asked for was free when chosen, but
        another process may take it before the master starts; Spark then binds the next one, and polling the
        one asked for would read that other server's pages."""
        try:
            found = _UI_BOUND.search((self._dir / "master.log").read_text(errors="replace"))
        except OSError:
            return None
        return int(found.group(1)) if found else None

    def stop(self) -> None:
        for p in self._procs:
            if p.poll() is None:
                p.terminate()
        for p in self._procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
        self._procs = []
        if self._dir is not None and self._own_dir:
            try:
                STANDALONE_FOLDER.remove(self._dir)
            except (NotOursError, OSError) as e:
                log.warning("The standalone cluster's folder is left in place: %s", e)
            self._dir = None

    def __enter__(self) -> "StandaloneCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _claimed(folder) -> bool:
    """Whether sparkrm claimed ``folder`` (as any kind of folder): its owner decides what it holds."""
    return (Path(folder) / MARKER).is_file()
