"""SLAQ: quality-driven core allocation for concurrent ML training jobs (pure-Python policy core).

Each scheduling epoch (spec 3.5-3.8) follows one flow, one module per step:

1. **report** -> :class:`LossHistory` (:mod:`.quality`): every finished iteration appends
   ``(iteration, loss, cpu_time_s, data_size)`` to its job's history;
2. **normalize** (:mod:`.quality`): loss *changes* divided by the job's largest change so far, so
   jobs with losses in different units compare (scaling a loss by 1000 changes nothing);
3. **predict** (:mod:`.predictor`): :class:`RuntimeModel` turns ``n`` cores into iterations per
   epoch (``c * S / n`` seconds each) and :class:`LossPredictor` fits the job's loss curve to give
   the normalized loss reduction (or level) those iterations bring; :func:`epoch_curve` combines
   them into a per-core curve;
4. **allocate** (:mod:`.allocator`): :func:`allocate` splits the cores, by Objective A (total
   reduction, Algorithm 1), Objective B (max-min quality) or the fair baseline.

None of these import Spark. The Spark side feeds them and applies the returned
``{job_id: cores}``: :mod:`.estimators` (``fit(estimator, df, job)``: an unmodified
``pyspark.ml`` estimator whose per-iteration objective reaches the job live),
:mod:`.trainers` (iterative trainers that report every iteration),
:mod:`.scheduler` (the epoch loop and enforcement inside one application) and
:mod:`.coordinator` (the same loop across applications, by executor rescaling). A user's training loop,
with the pure part spelled out (the Spark-side ``job.report`` wraps ``history.record``)::

    from spark_plugin.slaq import JobCurve, LossHistory, LossPredictor, RuntimeModel, allocate, epoch_curve

    history, runtime, predictor = LossHistory(), RuntimeModel(), LossPredictor()
    for k in range(max_iter):
        loss, cpu_s = train_one_iteration(model)          # the user's own step
        history.record(k, loss, cpu_time_s=cpu_s, data_size=1.0)   # i.e. report(k, loss)
        runtime.update(cpu_s, data_size=1.0)
    # scheduler side, once per epoch, for every active job:
    curve = epoch_curve(predictor.forecast(history), runtime, epoch_s=2.0)
    cores = allocate([JobCurve("job-1", curve)], capacity=16)   # {'job-1': 16}
"""

from .allocator import OBJECTIVES, JobCurve, allocate, allocate_fair, allocate_maxmin, allocate_reduction
from .estimators import fit
from .predictor import (CurveFit, Forecast, LossPredictor, RuntimeModel, epoch_curve, exponential,
                        reduction_error, sublinear)
from .quality import LossHistory, normalized_deltas, normalized_loss, reduction_fraction
from .scheduler import SlaqScheduler, TrainingJob
from .trainers import KMeansLloyd, LinearRegressionLBFGS, LinearSVMGD, LogisticRegressionGD, TrainingData

__all__ = ["OBJECTIVES", "CurveFit", "Forecast", "JobCurve", "KMeansLloyd", "LinearRegressionLBFGS", "LinearSVMGD",
           "LogisticRegressionGD", "LossHistory", "LossPredictor", "RuntimeModel", "SlaqScheduler", "TrainingData",
           "TrainingJob", "allocate", "allocate_fair", "allocate_maxmin", "allocate_reduction", "epoch_curve", "exponential",
           "fit", "normalized_deltas", "normalized_loss", "reduction_error", "reduction_fraction", "sublinear"]
