"""Spark event logs in every form Spark writes, decoded by Spark's own readers.

Spark 4 writes an application's event log as a rolling folder (``eventlog_v2_<appId>/events_<n>_<appId>.zstd``
beside an ``appstatus_`` marker; ``spark.eventLog.rolling.enabled`` is on by default) or as one file, compressed
by ``spark.eventLog.compression.codec`` (zstd by default; lz4 and snappy in Spark's own framings, which the
libraries' plain frame formats do not read) or not at all. Rather than decode any of that here, one short JVM
runs ``dev.sparkrm.advisor.EventLogText``, which opens each log with the history server's own reader classes
from the installed pyspark and prints its JSON lines; this module keeps only the events a run is made of.

An application still running, or killed, leaves an ``.inprogress`` log whose last line (or compressed block)
may be cut short: as Spark's replay does, a broken last line is tolerated and the log is marked unfinished; so
is a log that says it ended but lacks the application's end event (Spark's zstd reader stops quietly at a cut).
A broken line anywhere else means a damaged log, reported as its problem rather than read.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from spark_plugin.errors import SparkrmError

#: The listener events a run is built from, and the one naming the application; every other event is skipped
#: unparsed.
WANTED = frozenset({"SparkListenerApplicationStart", "SparkListenerJobStart", "SparkListenerJobEnd",
                    "SparkListenerStageCompleted", "SparkListenerExecutorAdded", "SparkListenerExecutorRemoved",
                    "SparkListenerApplicationEnd"})
#: Suffixes of compressed event logs (Spark's short codec names) and of unfinished ones.
CODEC_SUFFIXES = (".zstd", ".lz4", ".snappy", ".lzf")
IN_PROGRESS = ".inprogress"
ROLLING_PREFIX = "eventlog_v2_"
_PREFIX = '{"Event":"'


@dataclass
class EventLog:
    """One application's log: the events :data:`WANTED` in order, whether the application had ended, and the
    problem that makes it unusable (``None`` when readable)."""

    path: str
    completed: bool = True
    events: list[dict] = field(default_factory=list)
    truncated: list[str] = field(default_factory=list)
    problem: str | None = None

    @property
    def application(self) -> tuple[str, str | None] | None:
        """``(application id, attempt id or None)`` from the log's start event, ``None`` when it has none: what
        tells that a telemetry file or another log is of the same application."""
        start = next((e for e in self.events if e.get("Event") == "SparkListenerApplicationStart"), None)
        if start is None or not isinstance(start.get("App ID"), str):
            return None
        return start["App ID"], start.get("App Attempt ID")


def looks_like_event_log(path: Path) -> bool:
    """Whether Spark's reader should be asked for ``path``: a rolling folder, a compressed log by its name, or a
    plain file (finished or ``.inprogress``) whose first line is a listener event. Spark reads the suffix of any
    other ``x.<ext>.inprogress`` as a codec, so such a file (``x.jsonl.inprogress``) is no event log of its."""
    if path.is_dir():
        return path.name.startswith(ROLLING_PREFIX)
    if path.name.removesuffix(IN_PROGRESS).endswith(CODEC_SUFFIXES):
        return True
    try:
        with path.open("rb") as f:
            return f.read(len(_PREFIX) + 2).lstrip().startswith(b'{"Event"')
    except OSError:
        return False


def read_event_logs(paths: list[Path]) -> list[EventLog]:
    """Decode the event logs at ``paths`` (files or rolling folders) in one JVM; one :class:`EventLog` each.

    Raises
    ------
    SparkrmError
        When the JVM cannot run or fails (its last error line named), never for one bad log: that log's
        :attr:`EventLog.problem` says what is wrong.
    """
    if not paths:
        return []
    from spark_plugin.jar import find_java, jar_path, pyspark_jars_dir

    classpath = os.pathsep.join([str(pyspark_jars_dir() / "*"), str(jar_path())])
    cmd = [find_java(), "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", classpath,
           "dev.sparkrm.advisor.EventLogText", *map(str, paths)]
    with tempfile.TemporaryFile() as errors:
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errors, text=True, encoding="utf-8",
                              errors="replace") as proc:
            logs = _parse(proc.stdout)
        if proc.returncode != 0:
            errors.seek(0)
            lines = [ln for ln in errors.read().decode(errors="replace").splitlines() if ln.strip()]
            raise SparkrmError(f"Spark's event log reader failed (exit {proc.returncode}) on "
                               f"{', '.join(map(str, paths))}: {lines[-1] if lines else 'no message'}")
    return logs


def _parse(lines) -> list[EventLog]:
    logs: list[EventLog] = []
    broken = None  # (number, text) of a line that did not parse, forgiven only as a log's last
    last = None  # a log's last line, which may be cut short inside an event that is skipped unparsed
    for number, line in enumerate(lines, 1):
        line = line.rstrip("\n")
        if not line:
            continue
        if line.startswith("#sparkrm-"):
            kind, path, detail = (line.split("\t", 2) + ["", ""])[:3]
            if kind == "#sparkrm-truncated":
                logs[-1].truncated.append(f"{path}: {detail}")
                broken = None
                continue
            _close(logs, broken, last)
            broken = last = None
            logs.append(EventLog(path, completed=detail == "completed") if kind == "#sparkrm-log"
                        else EventLog(path, problem=detail))
            continue
        if broken is not None and logs[-1].problem is None:
            logs[-1].problem = (f"line {broken[0]} is not a JSON event ({broken[1][:60]!r}): the log is damaged; "
                                "pass an intact copy")
        broken, last = None, line
        if not line.startswith(_PREFIX):
            broken = (number, line)
            continue
        kind = line[len(_PREFIX):line.find('"', len(_PREFIX))]
        if kind in WANTED:
            try:
                logs[-1].events.append(json.loads(line))
            except json.JSONDecodeError:
                broken = (number, line)
    _close(logs, broken, last)
    return logs


def _close(logs: list[EventLog], broken, last: str | None) -> None:
    """End the last log: a broken last line is what an unfinished application leaves; keep what came before."""
    if not logs:
        return
    log = logs[-1]
    if broken is None and last is not None and last.startswith(_PREFIX):
        try:
            json.loads(last)
        except json.JSONDecodeError:
            broken = (None, last)
    ended = bool(log.events) and log.events[-1]["Event"] == "SparkListenerApplicationEnd"
    if log.completed and log.problem is None and not ended and (log.events or broken):
        log.truncated.append("no application end event: the log was cut short")
        broken = None
    if broken is not None and log.completed and not log.truncated and log.problem is None:
        log.problem = f"its last line is cut short ({broken[1][:60]!r}) though the application ended: the log is damaged"
    if log.problem is None and not log.events and not log.truncated:
        log.problem = "holds no job or executor event: not an event log, or an application that ran nothing"
