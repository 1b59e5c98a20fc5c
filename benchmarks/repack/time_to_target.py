"""Time to a target accuracy: plain pack-aware Hyperband, a fixed kill threshold, and HyperDrive's POP.

Every variant is the same ``tf_packing.Tuner`` (kNN packing, the Keras-Tuner-style space of
``models.hp_build_fn``, the digits split of the seed) with ``target=``: the search ends at the
first validation score at or above the target, as in HyperDrive's experiments (time to 77% on
CIFAR-10). What differs is the early termination inside rungs:

* ``hyperband``: none;
* ``kill``: ``KillRule(threshold, boundary=1)``, the fixed threshold of the earlier benchmark;
* ``hyperdrive``: ``HyperDrive(boundary, kill_threshold=chance + 0.05)``, judged against the target
  (kill when the predicted chance of reaching it within ``max_epochs`` is under 5%), promising
  trials' packs first.

A variant that never reaches the target reports its whole search time, marked as not reached.
"""

from __future__ import annotations

import sys

VARIANTS = ("hyperband", "kill", "hyperdrive")


def early_kill(variant: str, *, kill_threshold: float, boundary: int, chance: float):
    from tf_packing import HyperDrive, KillRule

    if variant == "hyperband":
        return None
    if variant == "kill":
        return KillRule(kill_threshold, 1)
    if variant == "hyperdrive":
        return HyperDrive(boundary=boundary, kill_threshold=chance + 0.05)
    raise ValueError(f"unknown variant {variant!r}; choose from {', '.join(VARIANTS)}")


def run(variant: str, seed: int, *, target: float, max_epochs: int, factor: int, kill_threshold: float,
        boundary: int, quiet: bool = False) -> dict:
    """One search of ``variant`` on the digits split of ``seed``; its time to ``target`` and what it trained."""
    import keras

    from tf_packing import Tuner, load_digits

    from .models import hp_build_fn

    (x, y), (xv, yv) = load_digits(seed=seed)
    keras.utils.set_random_seed(seed)
    tuner = Tuner(hp_build_fn(x.shape[1:]), objective="val_accuracy", max_epochs=max_epochs, factor=factor,
                  seed=seed, target=target, progress=not quiet,
                  early_kill=early_kill(variant, kill_threshold=kill_threshold, boundary=boundary, chance=0.1))
    tuner.search(x, y, validation_data=(xv, yv))
    reached = tuner.target_reached_
    trials = tuner.oracle_.trials_.values()
    record = {"variant": variant, "seed": seed, "wall_s": tuner.search_time_, "reached": reached is not None,
              "time_to_target_s": reached[1] if reached else None, "best_score": tuner.best_score_,
              "best_config": tuner.best_config_, "trials": len(trials),
              "trial_epochs": sum(len(c) for c in tuner.curves_.values()),
              "killed": sum(t.status == "killed" for t in trials),
              "trace": [[t, s] for t, _, s in tuner.trace_]}
    when = f"reached {target} after {reached[1]:.1f} s" if reached else f"never reached {target}"
    print(f"seed {seed} {variant}: {when}; {record['trial_epochs']} trial-epochs, {record['killed']} killed",
          file=sys.stderr)
    return record
