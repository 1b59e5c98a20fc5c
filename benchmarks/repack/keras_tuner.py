"""Keras Tuner's Hyperband and sparkrm's pack-aware ``Tuner`` on the same search space and data.

Both tuners get the one ``build_fn(hp)`` of ``models.hp_build_fn`` and the digits split of
``tf_packing.load_digits(seed=seed)``. Each run returns a record: wall time of the search, best
validation score, best hyper-parameters, trial count and the trace, ``[seconds since the search
started, score]`` for every validation score the tuner recorded (the time-to-accuracy curve).

Keras Tuner's Hyperband (1.4) semantics that matter when reading the numbers: brackets
``s = s_max .. 0`` with ``s_max + 1`` brackets counted while ``max_epochs / factor**s >= 1``;
round ``r`` of bracket ``s`` trains ``ceil((s_max + 1) / (s + 1) * factor**(s - r))`` trials to
``ceil(max_epochs / factor**(s - r))`` epochs (sizes rounded up, where Li et al. and sparkrm round
down); each promotion is a new trial that rebuilds the model, loads the weights of the parent's best
epoch (not its last; the optimizer's state is not restored) and trains on from the parent's epoch
count. A trial's score is its best epoch's. At ``max_epochs=27, factor=3``: 4 brackets, 49 sampled
configurations, 70 trials, 375 epochs.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
import time

#: ``sparkrm-fresh`` is ``sparkrm`` building every trial's model afresh (``reuse_models=False``): the cost of tracing.
TUNERS = ("keras-tuner", "sparkrm", "sparkrm-fresh")
OBJECTIVE = "val_accuracy"
MISSING = "keras-tuner is not installed: pip install keras-tuner tensorboard (or pip install -e '.[peers]')"


def available() -> bool:
    """Whether Keras Tuner can run here: with the TensorFlow backend it imports tensorboard in every trial."""
    return all(importlib.util.find_spec(m) is not None for m in ("keras_tuner", "tensorboard"))


def _trace_callback(trace: list):
    """A Keras callback appending ``[seconds since .start, val score]`` to ``trace`` at every epoch end."""
    import keras

    class Trace(keras.callbacks.Callback):
        start = None

        def on_epoch_end(self, epoch, logs=None):
            if logs and OBJECTIVE in logs:
                trace.append([time.perf_counter() - self.start, float(logs[OBJECTIVE])])

        def __deepcopy__(self, memo):
            return self  # Keras Tuner deep-copies the search's callbacks for every trial: keep one shared trace

    return Trace()


def _hypermodel(build_fn):
    import keras_tuner

    class Shared(keras_tuner.HyperModel):
        def build(self, hp):
            return build_fn(hp)

        def fit(self, hp, model, *args, **kwargs):
            return model.fit(*args, batch_size=hp.get("batch_size"), **kwargs)

    return Shared()


def run_keras_tuner(build_fn, train, validation, *, max_epochs: int, factor: int, seed: int, directory) -> dict:
    """One ``keras_tuner.Hyperband`` search (one Hyperband iteration)."""
    import keras_tuner

    tuner = keras_tuner.Hyperband(_hypermodel(build_fn), objective=OBJECTIVE, max_epochs=max_epochs, factor=factor,
                                  hyperband_iterations=1, seed=seed, directory=str(directory),
                                  project_name=f"keras-tuner-{seed}", overwrite=True)
    trace = []
    callback = _trace_callback(trace)
    callback.start = start = time.perf_counter()
    tuner.search(*train, validation_data=validation, verbose=0, callbacks=[callback])
    wall = time.perf_counter() - start
    best = tuner.oracle.get_best_trials(1)[0]
    trials = list(tuner.oracle.trials.values())
    return {"wall_s": wall, "best_score": float(best.score),
            "best_hp": {k: v for k, v in best.hyperparameters.values.items() if not k.startswith("tuner/")},
            "trials": len(trials), "configs": sum("tuner/trial_id" not in t.hyperparameters.values for t in trials),
            "epochs": len(trace), "trace": trace}


def run_sparkrm(build_fn, train, validation, *, max_epochs: int, factor: int, seed: int, directory,
                quiet: bool = False, keep_best_epoch: bool = False, reuse_models: bool = True) -> dict:
    """One search of sparkrm's pack-aware ``tf_packing.Tuner``."""
    from tf_packing import Tuner

    tuner = Tuner(build_fn, objective=OBJECTIVE, max_epochs=max_epochs, factor=factor, seed=seed,
                  directory=str(directory), project_name=f"sparkrm-{seed}", overwrite=True, progress=not quiet,
                  keep_best_epoch=keep_best_epoch, reuse_models=reuse_models)
    tuner.search(*train, validation_data=validation)
    trace = [[float(t), float(s)] for t, _, s in tuner.trace_]
    return {"wall_s": tuner.search_time_, "best_score": float(tuner.best_score_),
            "best_hp": dict(tuner.get_best_hyperparameters(1)[0].values), "trials": len(tuner.oracle_.trials_),
            "epochs": len(trace), "trace": trace}


def run_seed(seed: int, index: int, tuners=TUNERS, *, max_epochs: int = 27, factor: int = 3,
             quiet: bool = False, keep_best_epoch: bool = False, problem: str = "digits") -> dict:
    """Every tuner of ``tuners`` on ``problem``'s split of ``seed``; keras-tuner first when ``index`` is even.

    Returns ``{"seed", "order", "runs": {tuner: record}}``.
    """
    import keras

    from .models import hp_build_fn
    from .problems import load

    (x, y), (xv, yv), n_classes = load(problem, seed)
    build_fn = hp_build_fn(x.shape[1:], n_classes)
    order = [t for t in (TUNERS if index % 2 == 0 else TUNERS[::-1]) if t in tuners]
    runs = {}
    for name in order:
        keras.utils.set_random_seed(seed)  # both searches start from the same global RNG state
        with tempfile.TemporaryDirectory(prefix=f"repack-{name}-") as directory:
            if name == "keras-tuner":
                runs[name] = run_keras_tuner(build_fn, (x, y), (xv, yv), max_epochs=max_epochs, factor=factor,
                                             seed=seed, directory=directory)
            else:
                runs[name] = run_sparkrm(build_fn, (x, y), (xv, yv), max_epochs=max_epochs, factor=factor,
                                         seed=seed, directory=directory, quiet=quiet, keep_best_epoch=keep_best_epoch,
                                         reuse_models=name == "sparkrm")
        r = runs[name]
        print(f"seed {seed} {name}: {r['wall_s']:.1f} s, {r['trials']} trials, {r['epochs']} epochs, "
              f"best {OBJECTIVE} {r['best_score']:.4f}", file=sys.stderr)
    return {"seed": seed, "order": order, "runs": runs}
