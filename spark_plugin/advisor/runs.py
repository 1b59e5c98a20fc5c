"""Report: one job's runs at different executor counts, from sparkrm telemetry files or Spark event logs.

A *run* is what the scaling models need of one execution: the task slots it had (executors x cores; the
thesis's m_p), the tasks its stages ran (the problem size N_p, in base tasks) and its wall time, from the first
job's submission to the last job's end. A *job* is the jobs of one job group (``sc.setJobGroup``; the TPC-H
harness names one per query), or every job of the application when no group is given.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from spark_plugin.errors import SparkrmError


@dataclass(frozen=True)
class Run:
    """One run of a job: ``slots`` task slots, ``tasks`` tasks in all, ``wall_s`` seconds; ``stage_tasks``, the
    task count of each of its stages (empty when unknown), gives its waves at any slot count."""

    slots: int
    tasks: int
    wall_s: float
    source: str = ""
    stage_tasks: tuple[int, ...] = ()


def load_runs(paths, job: str | None = None) -> list[Run]:
    """The runs of ``job`` (a job group; ``None``: whole applications) in telemetry files or event logs.

    Raises
    ------
    SparkrmError
        Naming the file, when one is neither kind, holds no job of that group, or no executor.
    """
    return [load_run(Path(p), job) for p in paths]


def load_run(path: Path, job: str | None = None) -> Run:
    """One run from ``path``: a sparkrm telemetry file (``*.telemetry.jsonl``) or a Spark event log."""
    try:
        first = path.open("rb").readline()
    except OSError as e:
        raise SparkrmError(f"Cannot read run file {path}: {e.strerror or e}.") from e
    if b'"schemas"' in first:
        jobs, stages, slots = _from_telemetry(path)
    elif b'"Event"' in first:
        jobs, stages, slots = _from_event_log(path)
    else:
        raise SparkrmError(f"{path} is neither a sparkrm telemetry file nor a Spark event log: pass files written "
                           "under spark.sparkrm.telemetry.dir or spark.eventLog.dir.")
    mine = [j for j in jobs if job is None or j["group"] == job]
    if not mine:
        groups = sorted({str(j["group"]) for j in jobs})
        raise SparkrmError(f"{path} holds no job of group {job!r}; its groups: {', '.join(groups) or 'none'}.")
    if slots < 1:
        raise SparkrmError(f"{path} records no executor: the run's task slots are unknown.")
    stage_ids = {s for j in mine for s in j["stages"]}
    stage_tasks = tuple(n for sid, n in sorted(stages.items()) if sid in stage_ids)
    wall_ms = max(j["end"] for j in mine) - min(j["start"] for j in mine)
    return Run(slots=slots, tasks=sum(stage_tasks), wall_s=wall_ms / 1000, source=str(path), stage_tasks=stage_tasks)


def _from_telemetry(path: Path):
    from spark_plugin.telemetry_reader import read_telemetry

    t = read_telemetry(path)
    jobs = [{"group": j["jobGroup"], "start": j["submissionTime"], "end": j["completionTime"],
             "stages": j["stageIds"] or []} for j in t["job"].to_pylist() if j["completionTime"]]
    stages = {s["stageId"]: s["numTasks"] for s in t["stage"].to_pylist() if s["status"] == "succeeded"}
    return jobs, stages, _peak_slots(t["executor"].to_pylist(), "event", "executorId", "cores")


def _from_event_log(path: Path):
    jobs, stages, executors = {}, {}, []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        e = json.loads(line)
        kind = e.get("Event")
        if kind == "SparkListenerJobStart":
            jobs[e["Job ID"]] = {"group": (e.get("Properties") or {}).get("spark.jobGroup.id"),
                                 "start": e["Submission Time"], "end": None, "stages": e.get("Stage IDs", [])}
        elif kind == "SparkListenerJobEnd" and e["Job ID"] in jobs:
            jobs[e["Job ID"]]["end"] = e["Completion Time"]
        elif kind == "SparkListenerStageCompleted" and "Failure Reason" not in e["Stage Info"]:
            stages[e["Stage Info"]["Stage ID"]] = e["Stage Info"]["Number of Tasks"]
        elif kind == "SparkListenerExecutorAdded":
            executors.append({"event": "added", "executorId": e["Executor ID"],
                              "cores": e["Executor Info"]["Total Cores"]})
        elif kind == "SparkListenerExecutorRemoved":
            executors.append({"event": "removed", "executorId": e["Executor ID"], "cores": 0})
    return [j for j in jobs.values() if j["end"]], stages, _peak_slots(executors, "event", "executorId", "cores")


def _peak_slots(events, event_key: str, id_key: str, cores_key: str) -> int:
    """The most task slots the application held at once (executors come and go)."""
    live, peak = {}, 0
    for e in events:
        if e[event_key] == "added":  # telemetry's "registered" (the plugin's word) repeats it
            live[e[id_key]] = e[cores_key] or 1
        elif e[event_key] == "removed":
            live.pop(e[id_key], None)
        peak = max(peak, sum(live.values()))
    return peak
