"""The advisor benchmark's analysis (each job's runs predicted at held-out counts by every model they allow) and
the pieces of its reports."""

from __future__ import annotations

import statistics
from dataclasses import asdict, replace

from spark_plugin.advisor import Run, holdout_errors, recommend
from spark_plugin.advisor.intervals import interval
from spark_plugin.advisor.recommend import MODELS, chosen_model, holdout_log_errors, models_for, predictor

#: Each model, and the advisor's own choice among them (made from the runs a prediction is fitted on).
PREDICTORS = (*MODELS, "advisor")


def analyze(runs_by_query: dict[str, list[Run]]) -> dict:
    """Per job: leave-one-out and extrapolation errors of each model the runs allow, and the recommendation.

    Extrapolation predicts the runs at the largest slot count from those at fewer. Where the runs differ in
    partitioning (their ``source`` names each one's setting), the advice among the measured counts is checked
    on the setting too: it names the run whose partitioning to keep."""
    out = {}
    for query, runs in runs_by_query.items():
        runs = sorted(runs, key=lambda r: r.slots)
        top = runs[-1].slots
        smaller, largest = [r for r in runs if r.slots < top], [r for r in runs if r.slots == top]
        advice = recommend(runs)
        measured = recommend(runs, max_slots=top)  # what this run can check: the measured counts
        fastest = min(runs, key=lambda r: r.wall_s)
        models = (*models_for(runs), "advisor")
        out[query] = {
            "runs": [asdict(r) for r in runs],
            # each model's as the advice measured it; the advisor's own, its choice made without each run
            "holdout_error": {**advice.holdout_error, "advisor": statistics.median(holdout_errors(runs, "advisor"))},
            "extrapolation_error": {m: statistics.median(abs(predictor(m, smaller)(r.slots, r) - r.wall_s) / r.wall_s
                                                         for r in largest) for m in models},
            "recommended_slots": advice.slots, "recommended_measured_slots": measured.slots, "model": advice.model,
            "scaling_type": advice.scaling_type, "fastest_measured": fastest.slots,
            "recommended_measured_setting": measured.partitioning_from, "fastest_measured_setting":
                fastest.source if measured.partitioning_from else "",
            "advice_cost": _measured_at(runs, measured.slots, measured.partitioning_from) / fastest.wall_s - 1,
            "intervals": interval_coverage(runs)}
    return out


def interval_coverage(runs: list[Run]) -> list[dict]:
    """Each run held out in turn and predicted, with its interval, by the advisor fitted on the others (which
    themselves give the held-out errors the interval is made of): whether the interval covered the measured time.
    Needs four runs or more (three to fit, of which each is held out once more); fewer give no entries."""
    out = []
    for i, run in enumerate(runs):
        rest = runs[:i] + runs[i + 1:]
        if len(rest) < 3:
            break
        chosen = chosen_model(rest)
        iv = interval(predictor(chosen, rest)(run.slots, run), holdout_log_errors(rest, chosen), run.slots,
                      [r.slots for r in rest])
        out.append({"slots": run.slots, "measured_s": run.wall_s, "predicted_s": iv.predicted_s, "low_s": iv.low_s,
                    "high_s": iv.high_s, "extrapolated": iv.extrapolated,
                    "covered": iv.low_s <= run.wall_s <= iv.high_s})
    return out


def _measured_at(runs: list[Run], slots: int, setting: str) -> float:
    """The measured time of the advised run: at ``slots``, with the setting kept when one is named."""
    same = [r for r in runs if r.slots == slots]
    return min(r.wall_s for r in ([r for r in same if r.source == setting] if setting else []) or same)


def summarize(queries: dict) -> dict:
    """Median errors over jobs of each model every job could fit, and how often the advice is the fastest count."""
    models = [m for m in PREDICTORS if all(m in q["holdout_error"] for q in queries.values())]
    summary = {f"{kind}_{m}": statistics.median(q[f"{kind}_error"][m] for q in queries.values())
               for kind in ("holdout", "extrapolation") for m in models}
    summary["recommended_is_fastest_measured"] = sum(
        (q["recommended_measured_slots"], q.get("recommended_measured_setting", ""))
        == (q["fastest_measured"], q.get("fastest_measured_setting", "")) for q in queries.values())
    costs = [q["advice_cost"] for q in queries.values() if "advice_cost" in q]
    if costs:
        summary |= {"advice_cost_median": statistics.median(costs), "advice_cost_max": max(costs),
                    "advice_within_10pct": sum(c <= 0.10 for c in costs)}
    held = [iv for q in queries.values() for iv in q.get("intervals", [])]
    if held:
        inside = [iv for iv in held if not iv["extrapolated"]]
        summary |= {"interval_coverage": sum(iv["covered"] for iv in held) / len(held), "interval_runs": len(held),
                    "interval_coverage_inside": sum(iv["covered"] for iv in inside) / max(1, len(inside)),
                    "interval_width_median": statistics.median(iv["high_s"] / iv["low_s"] - 1 for iv in held)}
    summary["recommended_past_measured"] = sum(q["recommended_slots"] > max(r["slots"] for r in q["runs"])
                                               for q in queries.values())
    return summary


def error_columns(d: dict, kinds=("holdout", "extrapolation")) -> list[str]:
    """A job's errors, model by model, for a report row (``error_headers`` names them)."""
    return [f"{100 * d[f'{kind}_error'][m]:.1f}%" for kind in kinds for m in PREDICTORS if m in d[f"{kind}_error"]]


def error_headers(d: dict, kinds=("holdout", "extrapolation")) -> list[str]:
    words = {"holdout": "held-out", "extrapolation": "extrapolated"}
    return [f"{words[kind]} {_label(m)}" for kind in kinds for m in PREDICTORS if m in d[f"{kind}_error"]]


def summary_sentence(s: dict, kind: str) -> str:
    """``USBA **10.8%**, IPSO **13.7%**`` for the models the summary holds."""
    return ", ".join(f"{_label(m)} **{100 * s[f'{kind}_{m}']:.1f}%**" for m in PREDICTORS if f"{kind}_{m}" in s)


def _label(model: str) -> str:
    return "advisor's choice" if model == "advisor" else model.upper()


def recorded_run(r: dict, conf: dict) -> Run:
    """A run from a result file. Results before the waves model lack stage task counts; the SLAQ trainers' are
    known (every stage of theirs has ``partitions`` tasks), TPC-H's are not."""
    run = Run(**{**r, "stage_tasks": tuple(r.get("stage_tasks", ()))})
    if not run.stage_tasks and conf.get("workload") == "slaq" and run.tasks % conf["partitions"] == 0:
        run = replace(run, stage_tasks=(conf["partitions"],) * (run.tasks // conf["partitions"]))
    return run


ADVICE_HEADERS = ["IPSO type", "advised slots (up to 2x measured)", "advised among measured", "fastest measured"]


def advice_columns(d: dict) -> list:
    """The advice (with the partitioning to keep, when the runs had several) and the fastest measured run."""
    def setting(key):
        value = d.get(f"{key}_setting", "")
        return f" ({value.rpartition('=')[2]} partitions)" if value else ""

    return [d["scaling_type"], d["recommended_slots"],
            f"{d['recommended_measured_slots']}{setting('recommended_measured')}",
            f"{d['fastest_measured']}{setting('fastest_measured')}"]


def refit_note(conf: dict) -> str:
    """`` Measured at commit X, fitted again here.`` for a report of recorded runs fitted again (``--analyze``)."""
    return f" Measured at commit {conf['measured_at']}, fitted again here." if conf.get("measured_at") else ""


def advice_sentence(s: dict, jobs: int, noun: str) -> str:
    """How often the advice is checked right here: among the measured counts, the fastest measured one."""
    cost = (f" (the advised run took at most 10% longer than the fastest for {s['advice_within_10pct']}; "
            f"median {100 * s['advice_cost_median']:.1f}% longer, at worst {100 * s['advice_cost_max']:.1f}%)"
            if "advice_cost_median" in s else "")
    return (f"Advised among the measured counts, the advisor picks the fastest measured one for "
            f"{s['recommended_is_fastest_measured']} of {jobs} {noun}{cost}; with candidates up to twice the most "
            f"measured, it advises more slots than measured for {s['recommended_past_measured']} (not checked here).")
