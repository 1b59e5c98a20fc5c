"""Repack: packed training of several Keras models on one device, and pack-aware Hyperband.

``pack([model_a, model_b])`` trains compiled Keras models together from one
shared input stream with one fused step, each with its own loss, optimizer,
learning rate and batch size (pad/slice), while keeping exactly the weights and
loss curve each would have alone. ``Tuner`` runs Hyperband with its trials
packed into memory-feasible groups, with Keras Tuner's API (``build_fn(hp)``,
``HyperParameters``, ``Objective``) and HyperDrive's early termination; with
``spark=`` its packs run as Spark tasks on a cluster's executors, and a search
stopped mid-rung resumes from each trial's last finished epoch.

The policy modules (batching, hyperband, hyperparameters, objective,
packing_policy, memory, early_kill, hyperdrive, scorekeeper) import no TensorFlow; names backed by TensorFlow are imported on first use, so
``import tf_packing`` alone stays cheap.
"""

import importlib

from .batching import BatchPlanner, StepPlan, steps_per_epoch
from .early_kill import KillRule
from .hyperband import HyperbandOracle, Trial, bracket_rungs
from .hyperparameters import HyperParameters
from .memory import estimate_bytes
from .objective import Objective
from .packing_policy import index_distance, pack_opt

_LAZY = {"MemberCheckpoint": "checkpoint", "free": "checkpoint", "load": "checkpoint",
         "Member": "packed", "PackedModel": "packed", "pack": "packed",
         "Tuner": "tuner", "HyperDrive": "hyperdrive", "PackProfile": "profiler", "profile": "profiler",
         "load_cifar10": "data", "load_digits": "data", "load_mnist": "data", "make_classification": "data"}

__all__ = sorted(["BatchPlanner", "HyperParameters", "HyperbandOracle", "KillRule", "Objective", "StepPlan",
                  "Trial", "bracket_rungs", "estimate_bytes", "index_distance", "pack_opt", "steps_per_epoch", *_LAZY])


def __getattr__(name):
    if name in _LAZY:
        try:
            module = importlib.import_module(f".{_LAZY[name]}", __name__)
        except ModuleNotFoundError as e:
            if e.name and e.name.split(".")[0] in ("tensorflow", "keras"):
                raise ImportError(f"tf_packing.{name} needs TensorFlow, which this installation lacks. Install "
                                  "it with: pip install 'sparkrm[tf]'") from e
            raise
        return getattr(module, name)
    raise AttributeError(f"module 'tf_packing' has no attribute {name!r}")
