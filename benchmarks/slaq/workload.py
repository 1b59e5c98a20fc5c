"""The SLAQ benchmark's jobs: a seeded mix of the four trainers on generated data, arriving as a Poisson process.

Thesis Table 3.1 mixes algorithms and model variants over cached data sets; here each kind of
job has one generated data set (cached once, shared by the jobs of that kind, as jobs sharing a
cluster's cached tables would) and its jobs differ in hyperparameters, so their loss curves differ.
Sizes are chosen so an iteration takes roughly 50-500 ms on this machine's two cores.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field

KINDS = ("logreg", "svm", "linreg", "kmeans")


@dataclass(frozen=True)
class JobSpec:
    name: str
    kind: str
    arrival_s: float
    params: dict = field(default_factory=dict)


def generate(jobs: int, mean_gap_s: float, seed: int = 0, kinds=KINDS, params=None) -> list[JobSpec]:
    """``jobs`` jobs, kinds and hyperparameters drawn with ``seed``, Poisson arrivals with mean gap ``mean_gap_s``.

    The first ``len(kinds)`` jobs take each kind once, the rest draw theirs; ``params(kind, rng)`` draws a
    job's hyperparameters (default: :func:`trainer_params`).
    """
    rng = random.Random(seed)
    draw = params or trainer_params
    specs, t = [], 0.0
    for i in range(jobs):
        kind = kinds[i % len(kinds)] if i < len(kinds) else rng.choice(kinds)
        specs.append(JobSpec(f"{kind}-{i}", kind, round(t, 3), draw(kind, rng)))
        t += rng.expovariate(1.0 / mean_gap_s)
    return specs


def trainer_params(kind: str, rng: random.Random) -> dict:
    """Hyperparameters of a job of the package's trainers, drawn with ``rng``."""
    if kind == "logreg":
        return {"step": rng.choice([1.0, 2.0, 4.0]), "reg": rng.choice([1e-4, 1e-3]), "max_iter": 40}
    if kind == "svm":
        return {"step": rng.choice([0.25, 0.5, 1.0]), "reg": rng.choice([1e-3, 1e-2]), "max_iter": 40}
    if kind == "linreg":
        return {"reg": rng.choice([1e-4, 1e-2]), "max_iter": 30}
    return {"n_clusters": rng.choice([8, 16, 24]), "max_iter": 30, "seed": rng.randrange(1000)}


def run_arrivals(scheduler, specs: list[JobSpec], train, label: str) -> None:
    """Call ``train(spec)`` in a thread of its own at each spec's arrival time; wait for all of them.

    Raises
    ------
    RuntimeError
        Naming every job that failed (a failed job is reported, never silently dropped).
    """
    errors = []

    def guarded(spec: JobSpec):
        try:
            train(spec)
        except Exception as e:
            errors.append(f"{spec.name}: {e!r}")

    threads, start = [], scheduler.clock()
    for spec in specs:
        time.sleep(max(0.0, spec.arrival_s - (scheduler.clock() - start)))
        threads.append(threading.Thread(target=guarded, args=(spec,), name=f"slaq-{spec.name}"))
        threads[-1].start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"{len(errors)} {label} jobs failed: {errors}")


def trace(spec: JobSpec, job) -> dict:
    """A finished job's record for :mod:`.metrics`: kind, arrival and its ``[time, loss]`` reports."""
    h = job.history
    return {"kind": spec.kind, "arrival_s": job.arrival_s,
            "points": [[float(t), float(v)] for t, v in zip(h.times_, h.losses_)]}


class PinnedJob:
    """A job handle that always grants ``cores`` cores and times every iteration: a trainer alone on fixed cores.

    ``iterations`` holds one ``(wall seconds, CPU seconds)`` per iteration, the wall time from the
    :meth:`wait_for_cores` that started it to its report.
    """

    def __init__(self, cores: int):
        self.cores, self.iterations, self._started = cores, [], None

    def wait_for_cores(self, timeout=None) -> int:
        self._started = time.perf_counter()
        return self.cores

    def report(self, k, loss, *, cpu_time_s=None, data_size=1.0) -> None:
        self.iterations.append((time.perf_counter() - self._started, cpu_time_s))


def trainer(spec: JobSpec):
    """The estimator a job runs."""
    from spark_plugin.slaq import trainers

    p = spec.params
    if spec.kind == "logreg":
        return trainers.LogisticRegressionGD(step=p["step"], reg=p["reg"], max_iter=p["max_iter"])
    if spec.kind == "svm":
        return trainers.LinearSVMGD(step=p["step"], reg=p["reg"], max_iter=p["max_iter"])
    if spec.kind == "linreg":
        return trainers.LinearRegressionLBFGS(reg=p["reg"], max_iter=p["max_iter"])
    return trainers.KMeansLloyd(p["n_clusters"], max_iter=p["max_iter"], seed=p["seed"])


def _unit_spectral_norm(x):
    """Standardized columns scaled so that ``x.T @ x / n`` has largest eigenvalue 1.

    Gradient descent on the logistic loss is then stable for steps up to 8, and on the hinge
    loss the ``step / sqrt(k)`` schedule does not overshoot, whatever the generated data's scale.
    """
    import numpy as np

    x = (x - x.mean(0)) / x.std(0)
    return x / np.sqrt(np.linalg.eigvalsh(x.T @ x / len(x))[-1])


def datasets(sc, rows: int, partitions: int) -> dict:
    """One cached data set per kind (classification for logreg and svm), ``rows`` rows each."""
    from sklearn.datasets import make_blobs, make_classification, make_regression

    from spark_plugin.slaq.trainers import TrainingData

    x, y = make_classification(rows, 40, n_informative=20, random_state=0)
    classification = TrainingData.from_numpy(sc, _unit_spectral_norm(x), y, partitions=partitions)
    # Low effective rank: an ill-conditioned least-squares problem that takes L-BFGS tens of steps.
    x, y = make_regression(rows, 40, effective_rank=8, tail_strength=0.6, noise=1.0, random_state=1)
    regression = TrainingData.from_numpy(sc, x / x.std(0), y / y.std(), partitions=partitions)
    x, _ = make_blobs(rows, 16, centers=20, random_state=2)
    clusters = TrainingData.from_numpy(sc, x, partitions=partitions)
    return {"logreg": classification, "svm": classification, "linreg": regression, "kmeans": clusters}
