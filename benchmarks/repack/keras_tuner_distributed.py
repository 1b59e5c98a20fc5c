"""Keras Tuner's own distributed mode, the baseline of the tuner on several executors.

Keras Tuner distributes a search over processes it does not start: one *chief* serves the oracle over
gRPC (``KERASTUNER_TUNER_ID=chief``, ``KERASTUNER_ORACLE_IP``/``_PORT``) and each *worker*
(``KERASTUNER_TUNER_ID=tuner<i>``) asks it for trials and trains them with ``model.fit``. Here the
benchmark starts the chief and N workers as processes of this module, each worker pinned to its own
core (as each of our executors has its own) with TensorFlow's thread pools of one thread, all on the
same search as :mod:`.keras_tuner` (``hp_build_fn``, the digits split of the seed, Hyperband R and eta)
and one project folder.

Timed: from starting the processes until the last worker exits (Keras Tuner's chief then waits up to
20 s more before it notices; not counted). Each process imports TensorFlow inside that time, as our
executors' Python workers do inside theirs. Each worker appends every validation score with its wall
clock time to a file, so the record holds the search's trace (seconds since the start, score).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from spark_plugin.standalone import free_port

from .keras_tuner import MISSING, OBJECTIVE, _hypermodel, available


def run(seed: int, workers: int, *, max_epochs: int, factor: int) -> dict:
    """One distributed Keras Tuner Hyperband search: a chief and ``workers`` one-core workers."""
    if not available():
        raise RuntimeError(MISSING)
    cores = sorted(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory(prefix="keras-tuner-distributed-") as directory:
        result = Path(directory) / "result.json"
        env = {**os.environ, "KERASTUNER_ORACLE_IP": "127.0.0.1", "KERASTUNER_ORACLE_PORT": str(free_port()),
               "TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
        command = [sys.executable, "-m", __name__, "--seed", str(seed), "--max-epochs", str(max_epochs),
                   "--factor", str(factor), "--directory", directory]
        start, wall_start = time.perf_counter(), time.time()
        chief = subprocess.Popen([*command, "--result", str(result)], env={**env, "KERASTUNER_TUNER_ID": "chief"})
        time.sleep(1.0)  # the oracle's server first: a worker asking before it listens waits anyway
        pool = [subprocess.Popen(command, env={**env, "KERASTUNER_TUNER_ID": f"tuner{i}"},
                                 preexec_fn=_pin(cores[i % len(cores)])) for i in range(workers)]
        codes = [p.wait() for p in pool]
        wall = time.perf_counter() - start
        chief_code = chief.wait(timeout=120)
        if any(codes) or chief_code:
            raise RuntimeError(f"Keras Tuner's distributed search failed: workers exited {codes}, chief {chief_code}")
        record = json.loads(result.read_text())
        trace = sorted([t - wall_start, score] for path in Path(directory).glob("trace-*.jsonl")
                       for t, score in map(json.loads, path.read_text().splitlines()))
    record.update(wall_s=wall, workers=workers, trace=trace)
    return record


def _pin(core: int):
    return lambda: os.sched_setaffinity(0, {core})


def _score_log(path):
    """A Keras callback appending ``[wall clock time, validation score]`` of every epoch end to ``path``."""
    import keras

    class ScoreLog(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if logs and OBJECTIVE in logs:
                with open(path, "a") as f:
                    f.write(json.dumps([time.time(), float(logs[OBJECTIVE])]) + "\n")

    return ScoreLog()


def _search(args) -> None:
    """The chief's or a worker's part (the role is in ``KERASTUNER_TUNER_ID``)."""
    import keras
    import keras_tuner

    from tf_packing import load_digits

    from .models import hp_build_fn

    (x, y), (xv, yv) = load_digits(seed=args.seed)
    keras.utils.set_random_seed(args.seed)
    tuner = keras_tuner.Hyperband(_hypermodel(hp_build_fn(x.shape[1:])), objective=OBJECTIVE,
                                  max_epochs=args.max_epochs, factor=args.factor, hyperband_iterations=1,
                                  seed=args.seed, directory=args.directory, project_name="distributed")
    trace = Path(args.directory) / f"trace-{os.environ.get('KERASTUNER_TUNER_ID', 'tuner0')}.jsonl"
    tuner.search(x, y, validation_data=(xv, yv), verbose=0, callbacks=[_score_log(trace)])
    if args.result:  # the chief: its oracle holds every trial
        best = tuner.oracle.get_best_trials(1)[0]
        trials = list(tuner.oracle.trials.values())
        Path(args.result).write_text(json.dumps({
            "best_score": float(best.score), "trials": len(trials),
            "best_hp": {k: v for k, v in best.hyperparameters.values.items() if not k.startswith("tuner/")}}))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description="one process of a distributed Keras Tuner search (see run())")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--max-epochs", type=int, required=True)
    p.add_argument("--factor", type=int, required=True)
    p.add_argument("--directory", required=True)
    p.add_argument("--result", help="the chief writes the search's result here")
    _search(p.parse_args(argv))


if __name__ == "__main__":
    main()
