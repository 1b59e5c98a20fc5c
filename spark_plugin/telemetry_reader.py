"""Reading sparkrm telemetry as Arrow tables: live from the driver, or from its file.

The JVM listener keeps records as JSON lines, each with a sequence number
(``seq``) and a ``type``: ``task``, ``stage``, ``job`` or ``executor``. Python
reads them in batches over py4j (one call per batch, never one per event) and
turns each type into a ``pyarrow.Table`` whose schema the JVM declares, so
empty results still have every column.

Examples
--------
>>> import spark_plugin
>>> spark = spark_plugin.session("local[2]")            # doctest: +SKIP
>>> tm = spark_plugin.telemetry(spark)                   # doctest: +SKIP
>>> mark = tm.mark()                                     # doctest: +SKIP
>>> spark.range(10**6).groupBy((spark.range(1).id % 7)).count().collect()  # doctest: +SKIP
>>> tm.tasks(since=mark).to_pandas()                     # doctest: +SKIP
"""

from __future__ import annotations

import gzip
import io
import json
import logging
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson
from py4j.protocol import Py4JError

from .errors import SparkrmError

log = logging.getLogger(__name__)

RECORD_TYPES = ("task", "stage", "job", "executor")
_ARROW_TYPES = {"int": pa.int64(), "double": pa.float64(), "string": pa.string(),
                "bool": pa.bool_(), "int_list": pa.list_(pa.int64())}
_TYPE_FIELD = re.compile(rb'^\{"seq":\d+,"type":"([a-z_]+)"')
_STORE_CLASS = "dev.sparkrm.telemetry.TelemetryStore"


class TelemetryUnavailable(SparkrmError):
    """The session has no active sparkrm telemetry."""


def arrow_schemas(described: dict) -> dict[str, pa.Schema]:
    """Arrow schemas from the JVM's description ``{type: [[name, kind], ...]}``."""
    head = [("seq", pa.int64()), ("type", pa.string())]
    return {rtype: pa.schema(head + [(n, _ARROW_TYPES[k]) for n, k in fields])
            for rtype, fields in described.items()}


def parse_lines(lines, schemas: dict[str, pa.Schema]) -> dict[str, pa.Table]:
    """Group JSON lines by record type and parse each group with its schema."""
    groups: dict[str, list[bytes]] = {t: [] for t in schemas}
    for line in lines:
        m = _TYPE_FIELD.match(line)
        if m and m.group(1).decode() in groups:
            groups[m.group(1).decode()].append(line)
    return {t: _parse_group(rows, schemas[t]) for t, rows in groups.items()}


def _parse_group(rows: list[bytes], schema: pa.Schema) -> pa.Table:
    if not rows:
        return schema.empty_table()
    options = pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error")
    return pajson.read_json(io.BytesIO(b"\n".join(rows)), parse_options=options)


class Telemetry:
    """Live telemetry of a running application, read in batches.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        A session started with sparkrm's telemetry on (the default feature).
    batch_size : int, default=50000
        Records fetched per py4j call.

    Raises
    ------
    TelemetryUnavailable
        If the plugin is not loaded or telemetry is switched off.
    """

    def __init__(self, spark, *, batch_size: int = 50_000):
        self.batch_size = batch_size
        jvm = spark.sparkContext._jvm
        try:
            store = jvm.dev.sparkrm.telemetry.TelemetryStore.active()
        except (Py4JError, TypeError) as e:  # the class is not on the driver's class path
            raise TelemetryUnavailable(_UNAVAILABLE) from e
        if store is None:
            raise TelemetryUnavailable(_UNAVAILABLE)
        self._store = store
        self.schemas_ = arrow_schemas(json.loads(store.schemas()))

    def sync(self, timeout: float = 30.0) -> None:
        """Wait until every Spark event posted so far has been recorded."""
        self._store.awaitEvents(int(timeout * 1000))

    def mark(self) -> int:
        """Return the sequence number of the latest record, after :meth:`sync`.

        Pass it as ``since=`` to read only what happens afterwards.
        """
        self.sync()
        return int(self._store.lastSeq())

    def records(self, since: int = 0) -> dict[str, pa.Table]:
        """Every record with ``seq > since``, as one table per record type."""
        self.sync()
        last = int(self._store.lastSeq())
        first = int(self._store.firstSeq())
        if since + 1 < first:
            log.warning("%d telemetry records after seq %d were dropped from memory before they were "
                        "read; raise spark.sparkrm.telemetry.bufferRecords, read more often, or set "
                        "spark.sparkrm.telemetry.dir to keep them all on disk", first - since - 1, since)
        lines, cursor = [], since
        while cursor < last:
            chunk = gzip.decompress(bytes(self._store.fetch(cursor, self.batch_size))).splitlines()
            if not chunk:
                break
            lines += chunk
            cursor = json.loads(chunk[-1])["seq"]
        return parse_lines(lines, self.schemas_)

    def tasks(self, since: int = 0) -> pa.Table:
        """Finished task attempts after ``since``."""
        return self.records(since)["task"]

    def stages(self, since: int = 0) -> pa.Table:
        """Completed stage attempts after ``since``, with the sums of their tasks."""
        return self.records(since)["stage"]

    def jobs(self, since: int = 0) -> pa.Table:
        """Finished jobs after ``since``, with the sums of their tasks."""
        return self.records(since)["job"]

    def executors(self, since: int = 0) -> pa.Table:
        """Executor events (added, registered, removed) after ``since``."""
        return self.records(since)["executor"]

    def summary(self, since: int = 0) -> dict:
        """Totals over the tasks after ``since``; see :func:`summarize_tasks`."""
        return summarize_tasks(self.tasks(since))


def telemetry(spark, **kwargs) -> Telemetry:
    """Return the :class:`Telemetry` reader of ``spark``'s application."""
    return Telemetry(spark, **kwargs)


def summarize_tasks(tasks: pa.Table) -> dict:
    """Sum every numeric metric column of a task table, plus ``tasks`` (the row count).

    Times and identifiers (``launchTime``, ``taskId``, ...) are not summed.
    """
    skip = {"seq", "type", "jobId", "stageId", "stageAttempt", "taskId", "partition", "attempt",
            "launchTime", "finishTime", "peakExecutionMemoryBytes"}
    out = {"tasks": tasks.num_rows}
    for field in tasks.schema:
        if pa.types.is_integer(field.type) and field.name not in skip:
            out[field.name] = int(pc.sum(tasks[field.name]).as_py() or 0)
    return out


def max_concurrent_tasks(tasks: pa.Table, on_executor: bool = False) -> int:
    """The most tasks of ``tasks`` running at the same time, from their ``launchTime`` and ``finishTime``.

    The driver stamps ``finishTime`` once it has fetched a task's result, which can be well after the
    executor's status update freed the slot and the scheduler launched the next task there (tens of
    milliseconds on a busy driver). With ``on_executor``, a task ends instead at ``launchTime`` plus its
    time on the executor (deserialization and run): what a cap on running tasks is about.
    """
    ends = (pc.add(pc.add(tasks["launchTime"], tasks["deserializeTimeMs"]), tasks["runTimeMs"]) if on_executor
            else tasks["finishTime"])
    events = sorted([(t, 1) for t in tasks["launchTime"].to_pylist()] + [(t, -1) for t in ends.to_pylist()])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak


def read_telemetry(path, *, skip_corrupt: bool = False) -> dict[str, pa.Table]:
    """Read a telemetry file written under ``spark.sparkrm.telemetry.dir``.

    Parameters
    ----------
    path : str or Path
        A ``<appId>.telemetry.jsonl`` file (or its ``.inprogress`` form, for an
        application still running or one that crashed).
    skip_corrupt : bool, default=False
        Skip damaged records (with a warning counting them) instead of failing.

    Returns
    -------
    dict of str to pyarrow.Table
        One table per record type.

    Raises
    ------
    SparkrmError
        If the file does not start with sparkrm's schema line (an object of record
        types, each a list of ``[name, type]`` pairs), or (unless ``skip_corrupt``) a
        record other than a half-written last one is damaged or of an undeclared
        type: one line naming the file (and the line) and the fix.

    Notes
    -----
    A crashed application's file, or one still being written, may end in a
    half-written record: every complete record is read and the incomplete tail
    (what follows the last newline, when it is not JSON) is skipped with a warning
    saying how many bytes that was. A damaged line anywhere else is an error.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise SparkrmError(f"Cannot read telemetry file {path}: {e.strerror or e}.") from e
    header, _, body = raw.partition(b"\n")
    schemas = arrow_schemas(_described(path, header))
    lines = body.split(b"\n")
    tail = lines.pop()  # what follows the last newline: empty unless the writer stopped mid-record
    if tail.strip():
        if _is_json(tail):
            lines.append(tail)
        else:
            log.warning("%s ends in a half-written record (the application stopped while writing it): "
                        "skipped its last %d bytes", path, len(tail))
    groups: dict[str, list] = {t: [] for t in schemas}
    damaged = []
    for number, line in enumerate(lines, start=2):
        m = _TYPE_FIELD.match(line)
        if m and m.group(1).decode() in groups:
            groups[m.group(1).decode()].append((number, line))
        elif m:
            damaged.append((number, f"a {m.group(1).decode()} record, a type the schema line does not declare"))
        elif line.strip():
            damaged.append((number, "not a telemetry record"))
    tables = {}
    for rtype, rows in groups.items():
        try:
            tables[rtype] = _parse_group([line for _, line in rows], schemas[rtype])
        except pa.ArrowInvalid:
            good = []
            for number, line in rows:
                try:
                    _parse_group([line], schemas[rtype])
                    good.append(line)
                except pa.ArrowInvalid as e:
                    damaged.append((number, f"not a valid {rtype} record ({str(e).splitlines()[0]})"))
            tables[rtype] = _parse_group(good, schemas[rtype])
    if damaged:
        damaged.sort()
        if not skip_corrupt:
            number, why = damaged[0]
            raise SparkrmError(f"{path}, line {number}: {why}; {len(damaged)} damaged line(s) in all. Pass "
                               "skip_corrupt=True to read the others.")
        log.warning("%s: skipped %d damaged line(s), the first at line %d", path, len(damaged), damaged[0][0])
    return tables


def _described(path: Path, header: bytes) -> dict:
    """The record types a telemetry file's first line declares, ``{type: [[name, kind], ...]}``, once it
    declares one or more in that form; else one line naming the file and what is wrong."""
    fix = "Pass a file written under spark.sparkrm.telemetry.dir, as sparkrm wrote it."
    try:
        described = json.loads(header)["schemas"]
    except (ValueError, KeyError, TypeError):
        raise SparkrmError(f"{path} is not a sparkrm telemetry file: its first line is not the schema record "
                           f'({{"seq":0,"type":"schema","schemas":{{...}}}}). {fix}') from None
    if not isinstance(described, dict):
        raise SparkrmError(f"{path}: its schema line's \"schemas\" is {type(described).__name__}, not an object "
                           f"of record types. {fix}")
    if not described:
        raise SparkrmError(f"{path}: its schema line declares no record type (sparkrm writes "
                           f"{', '.join(RECORD_TYPES)} at least). {fix}")
    for rtype, fields in described.items():
        if not (isinstance(fields, list) and all(isinstance(f, list) and len(f) == 2 and isinstance(f[0], str)
                                                 and f[1] in _ARROW_TYPES for f in fields)):
            raise SparkrmError(f"{path}: its schema line's {rtype!r} schema is not a list of [name, type] pairs "
                               f"with types {', '.join(_ARROW_TYPES)}. {fix}")
    return described


def _is_json(line: bytes) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


_UNAVAILABLE = ("This SparkSession has no active sparkrm telemetry. Start it with "
                "spark_plugin.session(...) or spark_plugin.configure(builder), or pass the flags of "
                "`python -m spark_plugin submit-args`, and keep spark.sparkrm.telemetry.enabled=true.")
