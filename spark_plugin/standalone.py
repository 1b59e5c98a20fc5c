"""A throwaway Spark standalone cluster on this machine: one Master and N Workers as child processes.

pip's pyspark ships ``bin/spark-class`` but not the ``sbin/start-*.sh`` scripts, so this starts
``org.apache.spark.deploy.master.Master`` and ``...worker.Worker`` directly. Features that need
separate applications sharing one cluster (SLAQ's cross-application coordinator) are tested and
benchmarked on it; a real cluster works the same way with its own master URL.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from .errors import SparkrmError


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    """

    def __init__(self, workers: int = 1, cores: int = 2, memory: str = "2g", *, host_per_worker: bool = False,
                 start_timeout_s: float = 60.0):
        if workers < 1 or cores < 1:
            raise ValueError(f"workers and cores must be >= 1. Got workers={workers!r}, cores={cores!r}.")
        if host_per_worker and workers > 250:
            raise ValueError(f"host_per_worker gives each worker a 127.0.0.x address: at most 250. Got {workers}.")
        self.workers, self.cores, self.memory, self.start_timeout_s = workers, cores, memory, start_timeout_s
        self.hosts = [f"127.0.0.{i + 2}" if host_per_worker else "127.0.0.1" for i in range(workers)]
        self.port, self.ui_port = _free_port(), _free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self._procs: list[subprocess.Popen] = []
        self._dir: Path | None = None

    def start(self) -> "StandaloneCluster":
        import pyspark

        home = Path(pyspark.__file__).parent
        self._dir = Path(tempfile.mkdtemp(prefix="sparkrm-standalone-"))
        env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOG_DIR": str(self._dir),
               "SPARK_WORKER_DIR": str(self._dir / "work")}
        spark_class = [str(home / "bin" / "spark-class")]
        self._launch(spark_class + ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                    "--port", str(self.port), "--webui-port", str(self.ui_port)], env, "master")
        for i, host in enumerate(self.hosts):
            self._launch(spark_class + ["org.apache.spark.deploy.worker.Worker", "--cores", str(self.cores),
                                        "--memory", self.memory, "--webui-port", "0", "--host", host,
                                        self.url], {**env, "SPARK_LOCAL_IP": host}, f"worker-{i}")
        self._wait_for_workers()
        return self

    def _launch(self, cmd, env, name) -> None:
        log = open(self._dir / f"{name}.log", "w")
        self._procs.append(subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True))

    def _wait_for_workers(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self._procs):
                break
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as r:
                    import json

                    if sum(w["state"] == "ALIVE" for w in json.load(r)["workers"]) == self.workers:
                        return
            except OSError:
                pass
            time.sleep(0.3)
        logs = "\n".join(p.read_text()[-2000:] for p in sorted(self._dir.glob("*.log")))
        self.stop()
        raise SparkrmError(f"the standalone cluster did not start within {self.start_timeout_s:.0f} s "
                           f"(is Java 17 on PATH?). Master and worker logs:\n{logs}")

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
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> "StandaloneCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
