"""Rotary-DLT: Keras training jobs with completion criteria sharing one device (thesis 3.3.2).

Each epoch the arbiter decides which jobs train next, one module per step:

1. **report** -> :class:`History` (:mod:`.history`): every finished job leaves its kind, batch size,
   memory, accuracy after each epoch and epoch times, for the estimators of later, similar jobs;
2. **normalize** -> :func:`progress` (:mod:`.progress`, Algorithm 6): a job's progress toward its
   criterion (accuracy, convergence or runtime, parsed by :mod:`spark_plugin.shared.criteria`) as a
   fraction, so jobs with different goals compare;
3. **predict** (:mod:`.estimators`): the training-epoch estimator (the live accuracy curve, fitted by the
   curve module SLAQ and HyperDrive share, else similar past jobs), the memory estimator (past jobs'
   batch-size-memory line, padded) and the epoch-time recorder;
4. **allocate** (:mod:`.policies`, Algorithm 5): the threshold rule (lowest progress first until every
   job reaches T, then highest first) or a baseline orders the jobs, and the shared utility allocator
   (:mod:`spark_plugin.shared.utility`) takes them in order while the device's memory holds them.

None of these import TensorFlow. :class:`DltArbiter` (:mod:`.arbiter`) runs the loop with Keras: it
checkpoints the jobs it pauses and resumes them exactly, and with ``pack=True`` trains the jobs chosen
together as one pack::

    from tf_packing.dlt import DltArbiter, DltJob
    jobs = [DltJob("mlp-a", build_a, "UNTIL ACC >= 0.95 WITHIN 60 SECONDS", arrival_s=0),
            DltJob("mlp-b", build_b, "RUN FOR 5 EPOCHS", arrival_s=3)]
    results = DltArbiter(x, y, (x_val, y_val), policy="rotary-dlt", threshold=0.5).run(jobs)
"""

from ..lazy import lazy_exports
from .estimators import MemoryEstimator, epoch_seconds, epochs_to_reach
from .history import History, HistoryError, JobRecord
from .policies import POLICIES, DltView, choose, order
from .progress import progress

__all__ = ["POLICIES", "DltArbiter", "DltJob", "DltView", "History", "HistoryError", "JobRecord", "MemoryEstimator",
           "choose", "epoch_seconds", "epochs_to_reach", "order", "progress"]
__getattr__ = lazy_exports(__name__, {"DltArbiter": ".arbiter", "DltJob": ".arbiter"})
