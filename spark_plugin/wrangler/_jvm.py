"""The py4j edge of Wrangler: the driver's decisions and hold registry, and the application's Wrangler settings.

Translates and decides nothing: the driver JVM decides (``JvmDecisions``) and holds (``ExecutorHolds``);
Python installs the models it trained there and reads the decisions back.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from py4j.protocol import Py4JError

from ..errors import SparkrmError
from ..keys import KEYS


class WranglerUnavailable(SparkrmError):
    """The session runs without Wrangler (plugin not loaded, or ``spark.wrangler.enabled`` false)."""


def settings(spark) -> dict:
    """The validated ``spark.wrangler.*`` values of ``spark``, without the prefix (durations in ms).

    The model file is not read again: the driver plugin checked it when the session started.
    """
    conf = dict(spark.sparkContext.getConf().getAll())
    values = KEYS.validate(conf, files=False)
    return {k[len("spark.wrangler."):]: v for k, v in values.items() if k.startswith("spark.wrangler.")}


def _active(spark, name: str):
    """The driver's active ``dev.sparkrm.wrangler.<name>``; :class:`WranglerUnavailable` when there is none."""
    try:
        found = getattr(spark.sparkContext._jvm.dev.sparkrm.wrangler, name).active()
    except (Py4JError, TypeError) as e:
        raise WranglerUnavailable(_UNAVAILABLE) from e
    if found is None:
        raise WranglerUnavailable(_UNAVAILABLE)
    return found


class JvmDecisions:
    """The driver's ``JvmDecisions``: where every hold is decided.

    Raises
    ------
    WranglerUnavailable
        If the session runs without Wrangler.
    """

    def __init__(self, spark):
        self._decisions = _active(spark, "JvmDecisions")

    def install(self, model) -> None:
        """Decide with ``model`` from now on: a fitted :class:`.StragglerPredictor` (exported to JSON) or a JSON model's path."""
        if isinstance(model, (str, os.PathLike)):
            self._decisions.install(str(model))
            return
        from .export import write_json

        fd, path = tempfile.mkstemp(prefix="sparkrm-wrangler-", suffix=".json")
        os.close(fd)
        try:
            self._decisions.install(str(write_json(model, path)))
        finally:
            Path(path).unlink(missing_ok=True)

    def has_model(self) -> bool:
        return bool(self._decisions.hasModel())

    def configure(self, *, hint: bool, confidence: float, workload: str) -> None:
        """Override the mode, the threshold p and the workload of the configuration (releases the JVM's holds)."""
        self._decisions.configure(bool(hint), float(confidence), str(workload))

    def pause(self) -> None:
        """Decide nothing and release the decisions' holds until :meth:`resume`."""
        self._decisions.pause()

    def resume(self) -> None:
        self._decisions.resume()

    def decisions(self, after: int = 0) -> list[dict]:
        """Decisions with a sequence number above ``after``, oldest first (``JvmDecisions.decisionsJson``)."""
        return json.loads(self._decisions.decisionsJson(int(after)))

    def last(self) -> int:
        """Sequence number of the newest decision (0 before any)."""
        return int(self._decisions.lastDecision())

    def ticks(self) -> int:
        return int(self._decisions.ticks())

    def predict_seconds(self) -> list[float]:
        return json.loads(self._decisions.predictSecondsJson())


class JvmHolds:
    """The driver's ``ExecutorHolds``.

    Raises
    ------
    WranglerUnavailable
        If the session has no active holds object.
    """

    def __init__(self, spark):
        self._holds = _active(spark, "ExecutorHolds")

    def hold(self, executor_id: str, duration_ms: int, confidence: float, *, silent: bool = False) -> str:
        """Hold or renew; returns ``held``, ``renewed`` or the reason it was refused.

        ``silent=True`` holds an executor whose samples stopped: the feedback guard, which judges the
        model by the executor's past tasks, is not asked.
        """
        if silent:
            return str(self._holds.holdSilent(str(executor_id), int(duration_ms)))
        return str(self._holds.hold(str(executor_id), int(duration_ms), float(confidence)))

    def release(self, executor_id: str) -> bool:
        return bool(self._holds.release(str(executor_id)))

    def current(self) -> list[dict]:
        """Holds in force now."""
        return json.loads(self._holds.holdsJson())


_UNAVAILABLE = ("This SparkSession runs without Wrangler. Start it with features=['wrangler'] (or "
                "spark.wrangler.enabled=true and spark.sparkrm.telemetry.enabled=true) through "
                "spark_plugin.session/configure or the flags of `python -m spark_plugin submit-args`.")
