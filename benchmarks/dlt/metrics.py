"""What the Rotary-DLT benchmark measures, from the arbiter's results alone (no TensorFlow): pure and tested.

A result is one job's record from :meth:`tf_packing.dlt.DltArbiter.run`: ``arrival_s``, ``status``,
``finished_s``, ``criterion`` (its text), ``accuracies`` (validation accuracy after each epoch) and
``epoch_end_s`` (when each epoch ended, on the arbiter's clock).

* **Attained by a time**: the thesis's efficiency measure (Figure 3.10c counts the jobs done at 120
  minutes). Where every budget is in epochs, a job attains or not whatever the order, so only how soon
  tells policies apart.
* **Attainment progress** (thesis 3.4.2, read back after the run): an accuracy job's accuracy over its
  target; a convergence job's epochs over the epoch it converged at (or its most epochs, if it never
  did); a runtime job's epochs over its criterion's. The worst job's progress, averaged over time, is the
  thesis's fairness measure (Figure 3.10b: how soon the least advanced job gets going).
"""

from __future__ import annotations

import statistics

from spark_plugin.shared import criteria as crit


def attained_by(results: list[dict], t: float) -> int:
    """Jobs attained at or before ``t``."""
    return sum(r["status"] == crit.ATTAINED and r["finished_s"] <= t for r in results)


def attainment_progress(result: dict, epochs: int) -> float:
    """The thesis's attainment progress of a job after ``epochs`` of its epochs, in [0, 1]."""
    criterion = crit.parse(result["criterion"])
    if epochs == 0:
        return 0.0
    if criterion.kind == "accuracy":
        return min(result["accuracies"][epochs - 1] / criterion.threshold, 1.0)
    if criterion.kind == "convergence":
        ran = len(result["accuracies"])
        most = criterion.budget.epochs if criterion.budget and criterion.budget.epochs else ran
        line = ran if result["status"] == crit.ATTAINED else max(most, ran)
        return min(epochs / line, 1.0)
    if criterion.budget.epochs is None:
        raise ValueError(f"{result['criterion']}: attainment progress is read back in epochs; give runtime "
                         "criteria in EPOCHS")
    return min(epochs / criterion.budget.epochs, 1.0)


def progress_at(result: dict, t: float) -> float | None:
    """A job's attainment progress at time ``t`` (None before it arrives)."""
    if t < result["arrival_s"]:
        return None
    return attainment_progress(result, sum(end <= t for end in result["epoch_end_s"]))


def worst_progress(results: list[dict], times) -> float:
    """The lowest attainment progress among the jobs arrived, averaged over ``times``."""
    lows = [min(p for p in (progress_at(r, t) for r in results) if p is not None)
            for t in times if any(r["arrival_s"] <= t for r in results)]
    return statistics.fmean(lows) if lows else 0.0


def time_to_attain(results: list[dict]) -> float | None:
    """Mean seconds from arrival to attainment over the jobs attained (None if none was)."""
    spans = [r["finished_s"] - r["arrival_s"] for r in results if r["status"] == crit.ATTAINED]
    return statistics.fmean(spans) if spans else None


def makespan(results: list[dict]) -> float:
    """When the last job of a run finished."""
    return max(r["finished_s"] for r in results)


def runs_by_arm(runs: list[dict], seed) -> dict:
    """The runs of one seed, by arm."""
    return {r["arm"]: r for r in runs if r["seed"] == seed}


def reference_time(of_seed: dict) -> float:
    """The time every arm of a seed is measured at fractions of, from its runs by arm: FIFO's for the whole
    workload (without a FIFO arm, the fastest arm's)."""
    if "fifo" in of_seed:
        return makespan(of_seed["fifo"]["jobs"])
    return min(makespan(run["jobs"]) for run in of_seed.values())
