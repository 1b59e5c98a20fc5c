"""Repack: several compiled Keras models trained by one fused step on one shared input stream.

``pack([model_a, model_b])`` returns a :class:`PackedModel` whose ``fit`` trains every member with its
own loss, optimizer, learning rate and batch size (pad/slice, :mod:`.batching`), keeping exactly the
weights and loss curve each would have alone. One module per job:

* :mod:`.packed`, :mod:`.step`, :mod:`.inputs`, :mod:`.member_run`, :mod:`.evaluation`: the pack, its
  traced step, its input stream, each member's ``fit`` bookkeeping and a fast ``evaluate``;
* :mod:`.batching`: which rows of the shared batch each member takes (pure Python);
* :mod:`.checkpoint`: ``load`` and ``free``, a member's weights and optimizer state in and out;
* :mod:`.memory`: a member's and a pack's peak bytes (pure Python but for :func:`model_bytes`);
* :mod:`.profiler`: the thesis's T_s(Seq), T_s(Pack), IMPV and switching overhead;
* :mod:`.data`: bundled and generated data sets (nothing downloads).

This package is Repack's public face: the tuner and Rotary-DLT build on packs through the names below,
never through its modules. Names backed by TensorFlow import on first use.
"""

from ..lazy import lazy_exports

_NAMES = {"pack": ".packed", "Member": ".packed", "PackedModel": ".packed",
          "MAX_BATCH_SIZE": ".batching", "MAX_PACK": ".batching", "BatchPlanner": ".batching",
          "StepPlan": ".batching", "batch_size_of": ".batching", "steps_per_epoch": ".batching",
          "MemberCheckpoint": ".checkpoint", "load": ".checkpoint", "free": ".checkpoint",
          "build_optimizer": ".checkpoint", "read_checkpoint": (".checkpoint", "read"),
          "save_checkpoint": (".checkpoint", "save"),
          "estimate_bytes": ".memory", "model_bytes": ".memory", "pack_bytes": ".memory",
          "PackProfile": ".profiler", "profile": ".profiler",
          "load_cifar10": ".data", "load_digits": ".data", "load_mnist": ".data", "make_classification": ".data"}

__all__ = sorted(_NAMES)
__getattr__ = lazy_exports(__name__, _NAMES)
