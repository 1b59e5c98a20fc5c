"""Report: one job's runs at different executor counts, from sparkrm telemetry files or Spark event logs.

A *run* is what the scaling models need of one execution: the task slots it had (executors x cores; the
thesis's m_p), the tasks its stages ran (the problem size N_p, in base tasks) and its wall time, from the first
job's submission to the last job's end. A *job* is the jobs of one job group (``sc.setJobGroup``; the TPC-H
harness names one per query), or every job of the application when no group is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from spark_plugin.errors import SparkrmError

from .event_logs import IN_PROGRESS, ROLLING_PREFIX, looks_like_event_log, read_event_logs

#: What sparkrm names a telemetry file after the application's id (``.inprogress`` added while it runs).
TELEMETRY_SUFFIX = ".telemetry.jsonl"
_NOT_ENDED = "the application had not ended (still running, or killed)"


@dataclass(frozen=True)
class Run:
    """One run of a job: ``slots`` task slots, ``tasks`` tasks in all, ``wall_s`` seconds; ``stage_tasks``, the
    task count of each of its stages (empty when unknown), gives its waves at any slot count."""

    slots: int
    tasks: int
    wall_s: float
    source: str = ""
    stage_tasks: tuple[int, ...] = ()


@dataclass
class RunSet:
    """The runs found in the files a user named, every application left out, with why, and notes (what a run
    does not count, files set aside as duplicates): one line each."""

    runs: list[Run]
    left_out: list[tuple[str, str]]
    notes: list[tuple[str, str]]


def load_runs(paths, job: str | None = None) -> list[Run]:
    """The runs of ``job`` (a job group; ``None``: whole applications) in telemetry files or event logs.

    Raises
    ------
    SparkrmError
        When no file yields a run, naming each file and why it was left out.
    """
    found = collect_runs(paths, job)
    if not found.runs:
        raise SparkrmError(no_runs_message(found, job))
    return found.runs


def collect_runs(paths, job: str | None = None) -> RunSet:
    """Every run of ``job`` in ``paths``, and the applications left out.

    A path is a sparkrm telemetry file, a Spark event log in any form Spark writes (see
    :mod:`.event_logs`), or a folder of them (``spark.eventLog.dir`` or ``spark.sparkrm.telemetry.dir``):
    each application is one run. An application that failed or is still running counts with its finished
    jobs; one with no finished job of ``job``, or no executor, is left out and said why. An application named
    twice (its telemetry file and its event log, matched by Spark's application id) counts once, from the
    richer record; the other file is set aside with a note.

    Raises
    ------
    SparkrmError
        Naming the path, when one does not exist or cannot be read, or a telemetry file is damaged.
    """
    return collect_runs_of(paths, [job])[job]


def collect_runs_of(paths, jobs) -> dict:
    """:func:`collect_runs` for each of ``jobs`` (job groups, ``None`` for whole applications), reading every
    file once: ``{job: RunSet}``."""
    unread, applications, duplicates = _read(paths)
    found = {job: RunSet([], list(unread), list(duplicates)) for job in jobs}
    for app in applications:
        if isinstance(app.facts, str):
            for runs in found.values():
                runs.left_out.append((app.source, app.facts))
            continue
        for job, runs in found.items():
            _add(runs, app.source, *app.facts, job, finished_note=app.unfinished)
    return found


@dataclass(frozen=True)
class _Application:
    """One application as one file tells it: ``facts`` (jobs, succeeded stages' task counts, peak slots) or why
    the file is unusable, what was unfinished (``None``: it ended), and ``key``, which application it is."""

    source: str
    facts: tuple | str
    unfinished: str | None
    key: tuple  # (Spark application id, attempt id or None), or ("file", its resolved path) when it names none
    telemetry: bool

    def richness(self) -> tuple:
        """What one record of an application holds that another may lack, compared in this order: usable,
        ended, finished jobs, stages; a tie goes to the telemetry file (sparkrm's own record)."""
        if isinstance(self.facts, str):
            return (False,)
        jobs, stages, _ = self.facts
        finished = sum(j["end"] is not None and not j["failed"] for j in jobs)
        return True, self.unfinished is None, finished, len(stages), self.telemetry


def _read(paths):
    """``(left_out, applications, duplicates)``: the files that are neither kind, with why; each application
    once (:class:`_Application`); and the files set aside because another file holds the same application."""
    telemetry, event_logs, left_out = [], [], []
    for path in _expand(paths):
        kind = _kind(path)
        if kind == "telemetry":
            telemetry.append(path)
        elif kind == "event log":
            event_logs.append(path)
        else:
            left_out.append((str(path), kind))
    applications = [_Application(str(path), _from_telemetry(path),
                                 _NOT_ENDED if path.name.endswith(IN_PROGRESS) else None,
                                 _telemetry_application(path), True) for path in telemetry]
    for log in read_event_logs(event_logs):
        unfinished = None if log.completed else _NOT_ENDED
        if log.truncated:
            unfinished = f"its log breaks off: {'; '.join(log.truncated)}"
        applications.append(_Application(log.path, log.problem or _from_events(log.events), unfinished,
                                         log.application or ("file", str(Path(log.path).resolve())), False))
    return (left_out, *_once_each(applications))


def _once_each(applications: list[_Application]):
    """Each application once, whatever mix of its telemetry file and event log was named (counted twice, it
    would be predicted from its own twin): the richest record of it is kept, in the order first named; the
    others come back as notes naming the file kept."""
    by_key: dict[tuple, list[_Application]] = {}
    for app in applications:
        by_key.setdefault(app.key, []).append(app)
    kept, duplicates = [], []
    for key, records in by_key.items():
        best = max(records, key=_Application.richness)  # the first named among equals
        kept.append(best)
        what = f"application {key[0]}" if key[0] != "file" else "file"
        duplicates += [(r.source, f"set aside as a duplicate: it holds the same {what} as {best.source}, which "
                                  "is counted (once)") for r in records if r is not best]
    return kept, duplicates


def _telemetry_application(path: Path) -> tuple:
    """A telemetry file's application, from its name ``<appId>.telemetry.jsonl[.inprogress]`` (the attempt is
    not in it: matched with an event log of no attempt id, as Spark's local, standalone and client modes write)."""
    name = path.name.removesuffix(IN_PROGRESS)
    if name.endswith(TELEMETRY_SUFFIX) and len(name) > len(TELEMETRY_SUFFIX):
        return name.removesuffix(TELEMETRY_SUFFIX), None
    return "file", str(path.resolve())


def load_run(path: Path, job: str | None = None) -> Run:
    """One run from ``path``: a sparkrm telemetry file (``*.telemetry.jsonl``) or a Spark event log."""
    return load_runs([path], job)[0]


def no_runs_message(found: RunSet, job: str | None) -> str:
    """One line: no run of ``job`` was found, and why each application was left out."""
    what = f"job group {job!r}" if job else "any job"
    why = "; ".join(f"{path}: {reason}" for path, reason in found.left_out) or "no file was given"
    return f"No run of {what} found. {why}"


def _expand(paths) -> list[Path]:
    """The files named, with folders other than rolling event logs replaced by their visible entries."""
    out = []
    for p in map(Path, paths):
        if not p.exists():
            raise SparkrmError(f"Cannot read run file {p}: no such file or folder.")
        if p.is_dir() and not p.name.startswith(ROLLING_PREFIX):
            out += sorted(c for c in p.iterdir() if not c.name.startswith((".", "_")))
        else:
            out.append(p)
    return out


def _kind(path: Path) -> str:
    """``telemetry``, ``event log``, or why the file is neither."""
    if path.name.removesuffix(IN_PROGRESS).endswith(TELEMETRY_SUFFIX):
        return "telemetry"
    if looks_like_event_log(path):
        return "event log"
    if path.is_dir():
        return "a folder that is not an event log (pass the files in it)"
    try:
        with path.open("rb") as f:
            first = f.readline()
    except OSError as e:
        raise SparkrmError(f"Cannot read run file {path}: {e.strerror or e}.") from e
    if b'"schemas"' in first:
        return "telemetry"
    return ("neither a sparkrm telemetry file nor a Spark event log: pass files written under "
            "spark.sparkrm.telemetry.dir or spark.eventLog.dir")


def _add(found: RunSet, source: str, jobs, stages, slots: int, job, finished_note) -> None:
    """Make ``source``'s run of ``job`` from its finished jobs, or say why there is none."""
    mine = [j for j in jobs if job is None or j["group"] == job]
    done = [j for j in mine if j["end"] is not None and not j["failed"]]
    groups = sorted({str(j["group"]) for j in jobs})
    if not done:
        reason = (f"no finished job of group {job!r}; its groups: {', '.join(groups) or 'none'}" if job
                  else "no finished job")
        if mine:
            reason = f"its {len(mine)} job(s) of group {job!r} failed or did not finish"
        found.left_out.append((source, reason + (f"; {finished_note}" if finished_note else "")))
        return
    if slots < 1:
        found.left_out.append((source, "records no executor: the run's task slots are unknown"))
        return
    if len(done) < len(mine) or finished_note:
        found.notes.append((source, f"counts {len(done)} of its {len(mine)} job(s)"
                                    f"{' of group ' + repr(job) if job else ''}: the others failed or did not "
                                    f"finish{'; ' + finished_note if finished_note else ''}"))
    stage_ids = {s for j in done for s in j["stages"]}
    stage_tasks = tuple(n for sid, n in sorted(stages.items()) if sid in stage_ids)
    wall_ms = max(j["end"] for j in done) - min(j["start"] for j in done)
    found.runs.append(Run(slots=slots, tasks=sum(stage_tasks), wall_s=wall_ms / 1000, source=source,
                          stage_tasks=stage_tasks))


def _from_telemetry(path: Path):
    from spark_plugin.telemetry_reader import read_telemetry

    t = read_telemetry(path)
    fix = "Pass a telemetry file this sparkrm version wrote, or the application's Spark event log."
    missing = [rtype for rtype in ("job", "stage", "executor") if rtype not in t]
    if missing:
        raise SparkrmError(f"{path}: its schema line declares no {', '.join(missing)} records, which the advisor "
                           f"reads. {fix}")
    try:
        jobs = [{"group": j["jobGroup"], "start": j["submissionTime"], "end": j["completionTime"],
                 "stages": j["stageIds"] or [], "failed": j["status"] == "failed"} for j in t["job"].to_pylist()]
        stages = {s["stageId"]: s["numTasks"] for s in t["stage"].to_pylist() if s["status"] == "succeeded"}
        return jobs, stages, _peak_slots(t["executor"].to_pylist(), "event", "executorId", "cores")
    except KeyError as e:
        raise SparkrmError(f"{path}: its records lack the field {e.args[0]!r}, which the advisor reads. {fix}") \
            from None


def _from_events(events: list[dict]):
    """Jobs, succeeded stages' task counts and peak slots from one application's listener events, or why they
    cannot be read: an event lacking a field the advisor needs, or holding it in another form (a file in another
    format than Spark's event log)."""
    jobs, stages, executors = {}, {}, []
    for e in events:
        kind = e.get("Event")
        try:
            if kind == "SparkListenerJobStart":
                jobs[_whole(e, "Job ID")] = {"group": (e.get("Properties") or {}).get("spark.jobGroup.id"),
                                             "start": _whole(e, "Submission Time"), "end": None,
                                             "stages": _field(e, "Stage IDs", kind=list), "failed": False}
            elif kind == "SparkListenerJobEnd" and _whole(e, "Job ID") in jobs:
                job = jobs[e["Job ID"]]
                job["end"] = _whole(e, "Completion Time")
                job["failed"] = (e.get("Job Result") or {}).get("Result", "JobSucceeded") != "JobSucceeded"
            elif kind == "SparkListenerStageCompleted" and "Failure Reason" not in _field(e, "Stage Info", kind=dict):
                stages[_whole(e, "Stage Info", "Stage ID")] = _whole(e, "Stage Info", "Number of Tasks")
            elif kind == "SparkListenerExecutorAdded":
                executors.append({"event": "added", "executorId": _field(e, "Executor ID"),
                                  "cores": _whole(e, "Executor Info", "Total Cores")})
            elif kind == "SparkListenerExecutorRemoved":
                executors.append({"event": "removed", "executorId": _field(e, "Executor ID"), "cores": 0})
        except KeyError as missing:
            return (f"its {kind} event lacks {missing.args[0]}: not a Spark event log in the format the advisor "
                    "reads (Spark 3-4's JSON events); pass the log Spark wrote under spark.eventLog.dir")
    return list(jobs.values()), stages, _peak_slots(executors, "event", "executorId", "cores")


_KINDS = {int: "a whole number", str: "text", dict: "an object", list: "a list"}


def _field(event: dict, *path: str, kind: type = str):
    """The value at ``path`` in ``event`` when it is of ``kind``; else a ``KeyError`` saying which field, and what
    it should hold."""
    value = event
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise KeyError(f"the field {' / '.join(map(repr, path))} ({_KINDS[kind]})")
    return value


def _whole(event: dict, *path: str) -> int:
    return _field(event, *path, kind=int)


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
