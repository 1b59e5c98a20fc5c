"""The tuner: pack-aware Hyperband with HyperDrive's early termination, behind Keras Tuner's API.

``Tuner(build_fn, objective=..., max_epochs=...)`` runs Hyperband (:mod:`.hyperband`, a pure oracle a
user may pass in) with each rung's trials split into packs that fit one device (:mod:`.packing_policy`)
and trained by Repack (:mod:`tf_packing.repack`), locally or as Spark tasks (:mod:`.spark_packs`).
One module per job:

* :mod:`.hyperparameters`, :mod:`.objective`: Keras Tuner's ``hp`` and ``Objective``;
* :mod:`.hyperband`, :mod:`.packing_policy`: which trials train, for how long, in which packs;
* :mod:`.early_kill`, :mod:`.hyperdrive`, :mod:`.scorekeeper`: each trial's curve and the kills and
  target taken from it;
* :mod:`.pack_training`, :mod:`.model_pool`, :mod:`.spark_packs`: a pack's training, the traced models
  kept between packs, and packs as Spark tasks;
* :mod:`.project`, :mod:`.rung_progress`: the project folder a search resumes from;
* :mod:`.tuner`: :class:`Tuner`, which runs the loop.

Names backed by TensorFlow import on first use.
"""

from ..lazy import lazy_exports

_NAMES = {"Tuner": ".tuner", "HyperDrive": ".hyperdrive", "KillRule": ".early_kill",
          "HyperbandOracle": ".hyperband", "Trial": ".hyperband", "bracket_rungs": ".hyperband",
          "HyperParameters": ".hyperparameters", "Objective": ".objective",
          "index_distance": ".packing_policy", "pack_opt": ".packing_policy"}

__all__ = sorted(_NAMES)
__getattr__ = lazy_exports(__name__, _NAMES)
