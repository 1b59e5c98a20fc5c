"""SLAQ across applications: one coordinator splits a standalone cluster's executors among them (spec 8).

When training jobs run as separate Spark applications, no scheduler pool spans them; what can
move between them is executors. With ``spark.executor.cores=1`` one executor is one core, so:

* a :class:`Coordinator` process holds a :class:`~.scheduler.SlaqScheduler` with no Spark session
  of its own and serves the applications over ``multiprocessing.connection`` (pickled tuples,
  shared-key authentication);
* each application's driver trains through a :class:`RemoteJob`, which has the same
  ``wait_for_cores`` / ``report`` / ``finish`` calls as an in-application job. Before an
  iteration it asks for its grant and resizes its own application to that many executors with
  ``SparkContext.requestTotalExecutors`` and ``killExecutors`` (:class:`ExecutorScaler`); while
  its grant is 0 it gives all its executors back and waits.

Caveats (measured by ``python -m benchmarks.slaq rescale``): starting an executor is a new JVM, so
growing takes seconds where a pool change takes none; an executor killed takes its cached blocks
with it, and the next iteration recomputes them from lineage; dynamic allocation must be off
(``killExecutors`` is refused under it); the standalone master must have the cores free, so a
grant only takes effect once the application that lost the cores has released them.
"""

from __future__ import annotations

import logging
import threading
import time
from multiprocessing.connection import Client, Listener

from .scheduler import IterationClock, SlaqScheduler

LOG = logging.getLogger(__name__)

DEFAULT_AUTHKEY = b"sparkrm-slaq"


class Coordinator:
    """Serves SLAQ decisions to training applications (run it with ``python -m spark_plugin.slaq coordinator``).

    Parameters
    ----------
    cores : int
        Executors (of one core each) the cluster has for training jobs.
    address : tuple, default=("127.0.0.1", 0)
        Where to listen; port 0 picks a free one (see :attr:`address`).
    policy, epoch_s
        As in :class:`~.scheduler.SlaqScheduler`.
    """

    def __init__(self, cores: int, *, address=("127.0.0.1", 0), policy: str = "slaq", epoch_s: float = 2.0,
                 authkey: bytes = DEFAULT_AUTHKEY):
        self.scheduler = SlaqScheduler(None, cores=cores, policy=policy, epoch_s=epoch_s)
        self._listener = Listener(address, authkey=authkey)
        self.address = self._listener.address
        self._thread: threading.Thread | None = None

    def start(self) -> "Coordinator":
        self.scheduler.start()
        self._thread = threading.Thread(target=self.serve_forever, name="slaq-coordinator", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        while True:
            try:
                conn = self._listener.accept()
            except OSError:  # the listener was closed: stop serving
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def stop(self) -> None:
        self._listener.close()
        self.scheduler.stop()

    def __enter__(self) -> "Coordinator":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _serve(self, conn) -> None:
        """One application's connection: ``join`` first, then requests until ``finish`` or hang-up."""
        job = None
        try:
            op, name, weight, max_cores = conn.recv()
            if op != "join":
                raise ValueError(f"expected 'join', got {op!r}")
            job = self.scheduler.job(name, weight=weight, max_cores=max_cores)
            conn.send(("ok", None))
            while True:
                op, *args = conn.recv()
                if op == "grant":
                    conn.send(("ok", job.cores))
                elif op == "wait":
                    conn.send(("ok", self.scheduler._wait_for_cores(job, args[0])))
                elif op == "report":
                    job.record(*args)
                    conn.send(("ok", None))
                elif op == "finish":
                    conn.send(("ok", None))
                    return
                else:
                    raise ValueError(f"unknown request {op!r}")
        except EOFError:
            LOG.info("SLAQ application %s hung up", job.name if job else "?")
        except Exception as e:  # tell the application why, then drop it
            try:
                conn.send(("error", f"{type(e).__name__}: {e}"))
            except OSError:
                pass
        finally:
            if job is not None:
                job.finish()
            conn.close()


class ExecutorScaler:
    """Resizes this application to ``n`` one-core executors on a standalone cluster.

    Raises ``ValueError`` under dynamic allocation, where Spark refuses ``killExecutors``.
    """

    def __init__(self, spark, *, timeout_s: float = 60.0):
        self.sc = spark.sparkContext
        if self.sc.getConf().get("spark.dynamicAllocation.enabled", "false").lower() == "true":
            raise ValueError("SLAQ's executor rescaling needs spark.dynamicAllocation.enabled=false: Spark refuses "
                             "killExecutors under dynamic allocation. Set it to false for this application.")
        self.timeout_s = timeout_s
        self.latencies: list[tuple[int, int, float]] = []  # (from, to, seconds) of every resize

    def executor_ids(self) -> list[str]:
        """Ids of this application's live executors."""
        return sorted(str(e) for e in _scala_seq(self.sc._jsc.sc().getExecutorIds()))

    def scale_to(self, n: int) -> float:
        """Ask for ``n`` executors, kill the excess, wait until exactly ``n`` are live; returns the seconds it took."""
        started = time.perf_counter()
        jvm, jsc = self.sc._jvm, self.sc._jsc.sc()
        current = self.executor_ids()
        if len(current) == n:
            return 0.0
        jsc.requestTotalExecutors(n, 0, jvm.PythonUtils.toScalaMap(jvm.java.util.HashMap()))
        if len(current) > n:
            excess = jvm.java.util.ArrayList()
            for executor in current[n:]:
                excess.add(executor)
            jsc.killExecutors(jvm.PythonUtils.toSeq(excess))
        while len(self.executor_ids()) != n:
            if time.perf_counter() - started > self.timeout_s:
                raise TimeoutError(f"the application did not reach {n} executors within {self.timeout_s:.0f} s "
                                   f"(has {len(self.executor_ids())}); does the cluster have the cores free?")
            time.sleep(0.05)
        took = time.perf_counter() - started
        self.latencies.append((len(current), n, took))
        return took


def _scala_seq(seq) -> list:
    it = seq.iterator()
    out = []
    while it.hasNext():
        out.append(it.next())
    return out


class RemoteJob:
    """A training job in this application, scheduled by a :class:`Coordinator` elsewhere.

    ``address`` is the coordinator's ``(host, port)`` or ``"host:port"``; ``authkey`` its shared key
    (``SPARKRM_SLAQ_KEY`` of the coordinator's environment). Same calls as
    :class:`~.scheduler.TrainingJob`, so the trainers accept it. With ``spark``
    given, every grant is applied by resizing this application's executors; without, the job
    only reports (a job whose cores are enforced some other way).
    """

    def __init__(self, address, name: str, *, spark=None, weight: float = 1.0, max_cores: int | None = None,
                 authkey: bytes = DEFAULT_AUTHKEY, scale_timeout_s: float = 60.0):
        self.name = name
        self.scaler = None if spark is None else ExecutorScaler(spark, timeout_s=scale_timeout_s)
        if isinstance(address, str):  # "host:port", as the coordinator prints it
            host, _, port = address.rpartition(":")
            address = (host, int(port))
        self._conn = Client(tuple(address), authkey=authkey)
        self._clock = IterationClock()
        self._call("join", name, weight, max_cores)

    def _call(self, op, *args):
        self._conn.send((op, *args))
        status, value = self._conn.recv()
        if status != "ok":  # the coordinator dropped this job after telling why
            self._conn.close()
            raise RuntimeError(f"SLAQ coordinator refused {op!r} for job {self.name!r}: {value}")
        return value

    def wait_for_cores(self, timeout: float | None = None) -> int:
        """Get this job's grant, resize the application to it (releasing everything while it is 0), return it."""
        cores = self._call("grant")
        if cores == 0:
            if self.scaler is not None:
                self.scaler.scale_to(0)
            cores = self._call("wait", timeout)
        if self.scaler is not None:
            self.scaler.scale_to(cores)
        self._clock.started(cores)
        return cores

    def report(self, iteration: int, loss: float, *, cpu_time_s: float | None = None, data_size: float = 1.0) -> None:
        self._call("report", iteration, loss, cpu_time_s, data_size, *self._clock.stopped())

    def finish(self) -> None:
        if not self._conn.closed:
            self._call("finish")
            self._conn.close()

    def __enter__(self) -> "RemoteJob":
        return self

    def __exit__(self, *exc) -> None:
        self.finish()
