"""The pack-aware tuner on Spark executors: one executor against two, and against the tuner in one process.

Each seed runs the Keras Tuner comparison's search (``hp_build_fn`` on the digits split of
``load_digits(seed)``, Hyperband R and eta) once per arm, in an order rotated by seed:

* ``spark-N``: ``Tuner(..., spark=spark)`` on a fresh application of N one-core executors (its own
  ``local-cluster[N,1,...]``, or ``--master`` with ``spark.cores.max=N``, e.g. the emulated hosts,
  where each executor sits on its own host with its own CPU quota);
* ``local``: the same ``Tuner`` in the benchmark's own process (no Spark), TensorFlow on every core;
* ``spark-N+kill``: as ``spark-N``, with executor 1's JVM killed (SIGKILL) ``--kill-after`` seconds into the
  search; the cluster manager starts a new one and Spark retries the lost pack;
* ``keras-tuner-N``: Keras Tuner's own distributed Hyperband, a chief and N workers each pinned to its own
  core (:mod:`.keras_tuner_distributed`), the baseline a Keras Tuner user would run.

Timed: ``search`` alone (the application is started before and stopped after), which includes each
executor's Python worker importing TensorFlow and reading the data once. Recorded: wall time, best
score and configuration, the trace of scores, the packs of every rung and which executor trained each.
"""

from __future__ import annotations

import sys
import tempfile
import time

OBJECTIVE = "val_accuracy"


def parse_arm(arm: str) -> tuple[str, int | None, bool]:
    """``spark-2+kill`` -> ("spark", 2, True); ``keras-tuner-2`` -> ("keras-tuner", 2, False); ``local``.

    A ``@label`` after an arm names a second run of it (``spark-2,spark-2@again``: the A/A comparison)."""
    arm = arm.partition("@")[0]
    if arm == "local":
        return "local", None, False
    name, plus, suffix = arm.partition("+")
    kind, _, count = name.rpartition("-")
    if (kind not in ("spark", "keras-tuner") or not count.isdigit() or int(count) < 1
            or (plus and (suffix != "kill" or kind != "spark" or int(count) < 2))):
        raise ValueError(f"arm {arm!r}: use 'local', 'spark-N' (N executors), 'spark-N+kill' (N >= 2, one killed "
                         "mid-search) or 'keras-tuner-N' (N Keras Tuner workers), e.g. spark-2")
    return kind, int(count), bool(plus)


def run_arm(arm: str, seed: int, *, max_epochs: int, factor: int, master: str | None, quiet: bool,
            kill_after: float = 10.0) -> dict:
    """One search of ``arm`` on the digits split of ``seed``."""
    import keras

    from tf_packing import Tuner, load_digits

    from .models import hp_build_fn

    kind, executors, kill = parse_arm(arm)
    if kind == "keras-tuner":
        from .keras_tuner_distributed import run

        record = run(seed, executors, max_epochs=max_epochs, factor=factor)
        print(f"seed {seed} {arm}: {record['wall_s']:.1f} s, best {OBJECTIVE} {record['best_score']:.4f}, "
              f"{record['trials']} trials", file=sys.stderr)
        return record
    (x, y), (xv, yv) = load_digits(seed=seed)
    session = _session(executors, master) if executors else None
    try:
        keras.utils.set_random_seed(seed)
        with tempfile.TemporaryDirectory(prefix=f"repack-{arm}-") as directory:
            tuner = Tuner(hp_build_fn(x.shape[1:]), objective=OBJECTIVE, max_epochs=max_epochs, factor=factor,
                          seed=seed, directory=directory, project_name=arm, progress=not quiet, spark=session)
            killer = _killer(session, kill_after) if kill else None
            start = time.perf_counter()
            tuner.search(x, y, validation_data=(xv, yv))
            wall = time.perf_counter() - start
            if killer is not None:
                killer.cancel()
    finally:
        if session is not None:
            from benchmarks.common import stop_and_clean

            stop_and_clean(session, session.sparkContext.applicationId)
    record = {"wall_s": wall, "best_score": float(tuner.best_score_), "best_trial": tuner.results()[0]["trial"],
              "best_hp": dict(tuner.get_best_hyperparameters(1)[0].values), "trials": len(tuner.oracle_.trials_),
              "groups": tuner.groups_, "packs": tuner.executors_, "trace": [[t, s] for t, _, s in tuner.trace_],
              "results": [[r["trial"], r["epochs"], r[OBJECTIVE]] for r in tuner.results()]}
    print(f"seed {seed} {arm}: {wall:.1f} s, best {OBJECTIVE} {record['best_score']:.4f}, packs per rung "
          f"{[g['sizes'] for g in tuner.groups_]}", file=sys.stderr)
    return record


def _killer(session, seconds: float):
    """A started timer that SIGKILLs executor 1's JVM after ``seconds`` (logged to stderr)."""
    import os
    import signal
    import threading

    from benchmarks.common import executor_pid

    def kill():
        os.kill(executor_pid(session, "1"), signal.SIGKILL)
        print(f"killed executor 1 after {seconds:.0f} s", file=sys.stderr)

    timer = threading.Timer(seconds, kill)
    timer.start()
    return timer


def _session(executors: int, master: str | None):
    """A fresh application of ``executors`` one-core executors: on ``master``, else its own local-cluster."""
    from types import SimpleNamespace

    from benchmarks.common import benchmark_session

    conf = {"spark.ui.showConsoleProgress": "false"}
    if master:  # fewer of the cluster's one-core executors than it offers
        conf["spark.cores.max"] = str(executors)
    return benchmark_session(SimpleNamespace(master=master, executors=executors), None, conf=conf,
                             app_name="sparkrm-tuner-executors")


def same_search(a: dict, b: dict, tolerance: float = 1e-4) -> bool | None:
    """Whether two records hold the same trials, epochs and scores (within ``tolerance``); None for Keras Tuner's."""
    if "results" not in a or "results" not in b:
        return None
    if len(a["results"]) != len(b["results"]):
        return False
    return all(ta == tb and ea == eb and abs(sa - sb) <= tolerance
               for (ta, ea, sa), (tb, eb, sb) in zip(a["results"], b["results"]))
