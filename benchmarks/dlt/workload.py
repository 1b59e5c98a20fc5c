"""Rotary-DLT's workload: Keras jobs of mixed models and criteria arriving at Poisson times, on digits.

Every job trains on scikit-learn's bundled digits (so that any jobs chosen together can pack), with one
of four model kinds (a softmax regression, a small, a wide and a deep MLP), a learning rate and batch
size drawn per job, and a criterion drawn from three families in one of two mixes:

* ``deadlines``: three in five an accuracy by a deadline in seconds, one in five convergence within a
  number of epochs, one in five a run of a number of epochs. Deadlines scale with ``--deadline-scale``,
  so the same workload can be made harder or easier for the device.
* ``thesis``: the thesis's survey-based mix (Table 3.2): 60% convergence, 20% accuracy and 20% runtime,
  every budget in epochs, none in seconds. Its convergence deltas are the larger half of the thesis's
  list, its accuracy targets are moved to what digits reaches (the thesis's 70-92% are CIFAR-10's), and its
  epoch counts are scaled to models that train in a fraction of a second per epoch.
"""

from __future__ import annotations

import random

KINDS = {  # hidden layer widths
    "softmax": (),
    "mlp-small": (32,),
    "mlp-wide": (256,),
    "mlp-deep": (64, 64, 64),
}


def build(kind: str, lr: float, seed: int):
    """A compiled Keras classifier of ``kind`` for digits' 64 features, weights drawn from ``seed``."""
    import keras

    keras.utils.set_random_seed(seed)
    layers = [keras.Input((64,))] + [keras.layers.Dense(w, activation="relu") for w in KINDS[kind]]
    model = keras.Sequential(layers + [keras.layers.Dense(10, activation="softmax")])
    model.compile(keras.optimizers.Adam(lr), "sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def _deadlines(rng: random.Random, deadline_scale: float) -> str:
    family = rng.choices(["accuracy", "convergence", "runtime"], weights=[3, 1, 1])[0]
    if family == "accuracy":
        return (f"UNTIL ACC >= {rng.choice([0.93, 0.95, 0.96, 0.97])} "
                f"WITHIN {round(rng.uniform(5, 20) * deadline_scale)} SECONDS")
    if family == "convergence":
        return f"UNTIL CONVERGE(ACC, {rng.choice([0.002, 0.005])}) WITHIN {rng.randint(8, 20)} EPOCHS"
    return f"RUN FOR {rng.randint(3, 8)} EPOCHS"


def _thesis(rng: random.Random, deadline_scale: float) -> str:
    family = rng.choices(["convergence", "accuracy", "runtime"], weights=[3, 1, 1])[0]
    most = rng.choice([5, 10, 15, 20, 25, 30])  # the thesis's "maximum epoch for criteria", less its 1
    if family == "convergence":
        return f"UNTIL CONVERGE(ACC, {rng.choice([0.05, 0.03, 0.01, 0.005, 0.003])}) WITHIN {most} EPOCHS"
    if family == "accuracy":
        return f"UNTIL ACC >= {rng.choice([0.90, 0.92, 0.94, 0.95, 0.96, 0.97])} WITHIN {most} EPOCHS"
    return f"RUN FOR {rng.choice([3, 5, 10, 15])} EPOCHS"


MIXES = {"deadlines": _deadlines, "thesis": _thesis}


def jobs(seed: int, n: int, *, mean_gap_s: float, deadline_scale: float, mix: str = "deadlines") -> list[dict]:
    """``n`` job specs (kind, lr, batch size, criterion, arrival) drawn from ``seed``."""
    rng = random.Random(seed)
    arrival, out = 0.0, []
    for i in range(n):
        kind = rng.choice(list(KINDS))
        criterion = MIXES[mix](rng, deadline_scale)
        out.append({"name": f"j{i:02d}-{kind}", "kind": kind, "lr": rng.choice([0.001, 0.003, 0.01]),
                    "batch_size": rng.choice([16, 32, 64]), "criterion": criterion, "arrival_s": round(arrival, 2),
                    "seed": seed * 1000 + i})
        arrival += rng.expovariate(1.0 / mean_gap_s)
    return out
