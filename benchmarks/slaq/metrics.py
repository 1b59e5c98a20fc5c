"""What the SLAQ benchmark measures, from recorded traces alone (no Spark): pure and unit-tested.

A trace is one job's record: ``arrival_s`` and ``points``, a list of ``[time_s, loss]`` reports
(time on the run's clock). A job's quality at time t is its latest reported loss, normalized
as ``(L - L_final) / (L_0 - L_final)`` (thesis L1146: 1 at the start, 0 when done); its loss
reduction is one minus that. The same job under two policies runs the same iterations (the
trainers are deterministic), so its ``L_0`` and ``L_final`` are the same under both.
"""

from __future__ import annotations

import math
import statistics

import numpy as np


def normalized(trace: dict, loss: float) -> float:
    """``(L - L_final) / (L_0 - L_final)`` of this job, clipped to [0, 1] (0 if the job never improved)."""
    first, final = trace["points"][0][1], trace["points"][-1][1]
    span = first - final
    return 0.0 if not span > 0 else min(max((loss - final) / span, 0.0), 1.0)


def time_to_reduction(trace: dict, fraction: float) -> float | None:
    """Seconds from arrival until the job first had ``fraction`` of its total loss reduction."""
    for t, loss in trace["points"]:
        if 1.0 - normalized(trace, loss) >= fraction - 1e-12:
            return t - trace["arrival_s"]
    return None


def quality_at(trace: dict, t: float) -> float | None:
    """The job's normalized loss at time ``t``: 1 from arrival to its first report; None outside its life."""
    points = trace["points"]
    if t < trace["arrival_s"] or t > points[-1][0]:
        return None
    latest = 1.0
    for when, loss in points:
        if when > t:
            break
        latest = normalized(trace, loss)
    return latest


def average_normalized_loss(traces: list[dict], times) -> list[float | None]:
    """At each time, the mean normalized loss of the jobs active then (None when none is)."""
    out = []
    for t in times:
        values = [q for q in (quality_at(tr, t) for tr in traces) if q is not None]
        out.append(statistics.fmean(values) if values else None)
    return out


def worst_job_normalized_loss(traces: list[dict], times) -> float | None:
    """The largest, over jobs, of a job's normalized loss averaged over its own life (sampled at ``times``):
    how badly off the worst-served job was, which max-min allocation lowers first. A per-moment maximum
    would only show the newest arrival, always at 1 until its first report."""
    lives = [[q for q in (quality_at(tr, t) for t in times) if q is not None] for tr in traces]
    return max((statistics.fmean(life) for life in lives if life), default=None)


def loss_seconds(trace: dict, times, step_s: float) -> float:
    """The job's normalized loss summed over its life in seconds (``times`` spaced ``step_s`` apart). Unlike
    the life average, it falls when a job is served faster throughout: a job run twice as fast from start
    to end keeps its average and halves this."""
    return step_s * sum(q for q in (quality_at(trace, t) for t in times) if q is not None)


def worst_job_loss_seconds(traces: list[dict], times, step_s: float) -> float | None:
    """The largest :func:`loss_seconds` of any job: mostly the longest job's."""
    return max((loss_seconds(tr, times, step_s) for tr in traces), default=None)


def worst_job_slowdown(traces: list[dict], times, step_s: float) -> float | None:
    """The largest, over jobs, of a job's :func:`loss_seconds` over its loss-seconds alone on the same cores
    (``alone_loss_s``, from the simulation): the worst-served job whatever its size (None without them)."""
    ratios = [loss_seconds(tr, times, step_s) / tr["alone_loss_s"] for tr in traces if tr.get("alone_loss_s")]
    return max(ratios, default=None)


def worst_time_to_reduction(traces: list[dict], fraction: float) -> float | None:
    """The longest, over jobs, of :func:`time_to_reduction`: how long the worst-served job took, from its
    arrival, to ``fraction`` of its loss reduction."""
    spans = [time_to_reduction(tr, fraction) for tr in traces]
    return max((s for s in spans if s is not None), default=None)


def summarize(traces: list[dict], step_s: float = 0.5) -> dict:
    """Averages of one policy's run: time to 90%/95% reduction, time-averaged normalized loss (over the
    active jobs, and of the worst-served job), makespan; and the worst job's loss-seconds (absolute, and over
    its own alone where the traces carry it) and time to 90%."""
    end = max(tr["points"][-1][0] for tr in traces)
    times = np.arange(0.0, end + step_s, step_s)
    curve = average_normalized_loss(traces, times)
    active = [v for v in curve if v is not None]
    return {"time_to_90_s": mean_time_to_reduction(traces, 0.9), "time_to_95_s": mean_time_to_reduction(traces, 0.95),
            "avg_normalized_loss": statistics.fmean(active) if active else None,
            "worst_job_normalized_loss": worst_job_normalized_loss(traces, times),
            "worst_job_loss_s": worst_job_loss_seconds(traces, times, step_s),
            "worst_job_slowdown": worst_job_slowdown(traces, times, step_s),
            "worst_time_to_90_s": worst_time_to_reduction(traces, 0.9),
            "makespan_s": end, "jobs": len(traces),
            "curve": {"t": times.tolist(), "avg_normalized_loss": curve}}


def mean_time_to_reduction(traces: list[dict], fraction: float) -> float | None:
    """Mean over ``traces`` of :func:`time_to_reduction` (jobs that never got there left out; None if none did)."""
    return _mean([time_to_reduction(tr, fraction) for tr in traces])


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None


def prediction_errors(losses: list[float], horizons=(1, 5, 10), predictor=None) -> dict:
    """Relative error of the weighted curve fit and of the strawman, ``h`` iterations ahead.

    At every point of the history with at least the predictor's minimum points behind it and
    ``h`` points ahead, both predict the loss ``h`` iterations on; the error is
    :func:`spark_plugin.slaq.predictor.reduction_error` (error over the true reduction from the
    job's first loss, so units and offsets cancel). Returns per horizon the mean of each.
    """
    from spark_plugin.slaq.predictor import LossPredictor, reduction_error
    from spark_plugin.slaq.quality import LossHistory

    predictor = predictor or LossPredictor()
    errors = {h: {"fit": [], "strawman": []} for h in horizons}
    history = LossHistory()
    for k, loss in enumerate(losses):
        history.record(k, loss)
        if len(history) < predictor.min_points:
            continue
        forecast = predictor.forecast(history)
        drop = max(losses[k - 1] - loss, 0.0)
        for h in horizons:
            if k + h < len(losses):
                truth = losses[k + h]
                errors[h]["fit"].append(reduction_error(losses[0], truth, float(forecast.loss(h))))
                errors[h]["strawman"].append(reduction_error(losses[0], truth, loss - drop * h))
    return {h: {name: _finite_mean(v) for name, v in e.items()} for h, e in errors.items()}


def _finite_mean(values) -> float | None:
    values = [v for v in values if math.isfinite(v)]
    return statistics.fmean(values) if values else None
