"""Repack: packed training of several Keras models on one device, and pack-aware Hyperband.

``pack([model_a, model_b])`` trains compiled Keras models together from one
shared input stream with one fused step, each with its own loss, optimizer,
learning rate and batch size (pad/slice), while keeping exactly the weights and
loss curve each would have alone. ``Tuner`` runs Hyperband with its trials
packed into memory-feasible groups, with Keras Tuner's API (``build_fn(hp)``,
``HyperParameters``, ``Objective``) and HyperDrive's early termination; with
``spark=`` its packs run as Spark tasks on a cluster's executors, and a search
stopped mid-rung resumes from each trial's last finished epoch.

Three systems, one folder each (``docs/architecture.md``): :mod:`tf_packing.repack` (packed training),
:mod:`tf_packing.tuner` (pack-aware Hyperband with HyperDrive) and :mod:`tf_packing.dlt` (Rotary-DLT).
This package re-exports the first two's public names, each imported on first use, so ``import
tf_packing`` alone stays cheap; the modules that were flat here before keep working at their old paths,
with a DeprecationWarning.
"""

from spark_plugin.moved import keep_old_paths

from .lazy import lazy_exports

_REPACK = ("MemberCheckpoint", "free", "load", "Member", "PackedModel", "pack", "BatchPlanner", "StepPlan",
           "steps_per_epoch", "estimate_bytes", "PackProfile", "profile", "load_cifar10", "load_digits",
           "load_mnist", "make_classification")
_TUNER = ("Tuner", "HyperDrive", "KillRule", "HyperbandOracle", "Trial", "bracket_rungs", "HyperParameters",
          "Objective", "index_distance", "pack_opt")
_NAMES = {**{name: ".repack" for name in _REPACK}, **{name: ".tuner" for name in _TUNER}}

__all__ = sorted(_NAMES)
__getattr__ = lazy_exports(__name__, _NAMES)

keep_old_paths({**{f"tf_packing.{m}": f"tf_packing.repack.{m}" for m in (
    "batching", "checkpoint", "data", "evaluation", "inputs", "member_run", "memory", "packed", "profiler", "step")},
    **{f"tf_packing.{m}": f"tf_packing.tuner.{m}" for m in (
        "early_kill", "hyperband", "hyperdrive", "hyperparameters", "model_pool", "objective", "pack_training",
        "packing_policy", "project", "rung_progress", "scorekeeper", "spark_packs")}})
