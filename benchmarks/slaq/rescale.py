"""What moving cores between applications costs: SLAQ's coordinator on a standalone cluster.

    python -m benchmarks.slaq rescale --rounds 3

One application trains logistic regression through a :class:`RemoteJob`; a second job (a
stand-in for another application) joins and leaves the coordinator in turn, so the application
shrinks from 2 executors to 1 and grows back each round. Recorded: the seconds each resize took
(decision applied to executors live), and the iteration time right after a grow, when the new
executor has none of the cached blocks, against the steady iterations before.
"""

from __future__ import annotations

import contextlib
import statistics
import time

from benchmarks.cluster import conf_for_master
from benchmarks.common import markdown_table, report_header, result_path, run_metadata, write_json, write_markdown


def measure(rows: int, rounds: int, master: str | None = None) -> dict:
    """On ``master`` (default: a one-worker standalone cluster of 2 cores), the application holds every core
    the emulated cluster gives it (``spark.cores.max``), or 2 on another master."""
    import spark_plugin
    from spark_plugin.slaq.coordinator import Coordinator, RemoteJob
    from spark_plugin.standalone import StandaloneCluster

    from .workload import datasets

    with contextlib.ExitStack() as stack:
        if master is None:
            master = stack.enter_context(StandaloneCluster(workers=1, cores=2, memory="4g")).url
        conf = {"spark.executor.cores": "1", "spark.executor.memory": "1g", "spark.cores.max": "2",
                **conf_for_master(master), "spark.ui.showConsoleProgress": "false"}
        cores = int(conf["spark.cores.max"])
        half = cores // 2
        spark = spark_plugin.session(master, features=[], app_name="slaq-rescale", conf=conf)
        stack.callback(spark.stop)
        data = datasets(spark.sparkContext, rows, partitions=2 * cores)["logreg"]
        with Coordinator(cores=cores, policy="fair", epoch_s=0.2) as coordinator:
            app = RemoteJob(coordinator.address, "app", spark=spark)
            steady, after_grow = [], []
            for round_ in range(rounds):
                steady += _iteration_times(data, app, 4)
                other = RemoteJob(coordinator.address, f"other-{round_}")
                _wait_for(lambda: app.wait_for_cores() == cores - half)
                other.finish()
                _wait_for(lambda: app.wait_for_cores() == cores)
                after_grow += _iteration_times(data, app, 1)
            app.finish()
        latencies = app.scaler.latencies
    shrink = [s for a, b, s in latencies if b < a]
    grow = [s for a, b, s in latencies if b > a and a > 0]
    return {"shrink_s": shrink, "grow_s": grow, "steady_iteration_s": steady, "first_after_grow_s": after_grow,
            "cores": cores, "master": master}


def _iteration_times(data, job, n: int) -> list[float]:
    """Wall seconds of ``n`` single-iteration fits on the job's current executors."""
    from spark_plugin.slaq.trainers import LogisticRegressionGD

    times = []
    for _ in range(n):
        started = time.perf_counter()
        LogisticRegressionGD(max_iter=1).fit(data, _OneShot(job))
        times.append(time.perf_counter() - started)
    return times


class _OneShot:
    """Uses the job's current grant without reporting (these fits are measurements, not training)."""

    def __init__(self, job):
        self.cores = len(job.scaler.executor_ids())

    def wait_for_cores(self, timeout=None):
        return self.cores

    def report(self, *args, **kwargs):
        pass


def _wait_for(condition, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the coordinator's grant did not change in time")
        time.sleep(0.1)


def run(args) -> None:
    meta = run_metadata({"rows": args.rows, "rounds": args.rounds, "master": args.master})
    result = measure(args.rows, args.rounds, args.master)
    json_path = write_json(result_path("slaq", "rescale.json", meta, args.out), {"meta": meta, **result})
    med = {k: statistics.median(v) for k, v in result.items() if isinstance(v, list) and v}
    n, kept = result["cores"], result["cores"] - result["cores"] // 2
    where = ("a one-worker standalone cluster with 2 cores" if args.master is None
             else f"`{result['master']}`, holding {n} one-core executors")
    md = report_header(meta, "SLAQ across applications: the cost of moving executors") + [
        f"One application (`spark.executor.cores=1`) on {where}; logistic regression on {args.rows} cached rows "
        f"in {2 * n} blocks. {args.rounds} rounds of: steady iterations on {n} executors, another job joins the "
        f"coordinator (fair policy: the application shrinks to {kept}), leaves (it grows back to {n}).", "",
        markdown_table(["measure", "median s", "all"],
                       [[name, med.get(key, float("nan")), ", ".join(f"{v:.2f}" for v in result[key])]
                        for name, key in ((f"shrink {n} -> {kept} executors", "shrink_s"),
                                          (f"grow {kept} -> {n} executors", "grow_s"),
                                          ("steady iteration", "steady_iteration_s"),
                                          ("first iteration after a grow", "first_after_grow_s"))]), ""]
    md_path = write_markdown(json_path, md)
    print(f"wrote {json_path} and {md_path}")
