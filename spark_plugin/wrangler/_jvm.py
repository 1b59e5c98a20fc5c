"""The py4j edge of Wrangler: the driver's hold registry and the application's Wrangler settings.

Translates and decides nothing: the policy calls :meth:`JvmHolds.hold` and
:meth:`JvmHolds.release`; the JVM enforces the cap and the last-open-executor rule.
"""

from __future__ import annotations

import json

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


class JvmHolds:
    """The driver's ``ExecutorHolds``.

    Raises
    ------
    WranglerUnavailable
        If the session has no active holds object.
    """

    def __init__(self, spark):
        try:
            self._holds = spark.sparkContext._jvm.dev.sparkrm.wrangler.ExecutorHolds.active()
        except (Py4JError, TypeError) as e:
            raise WranglerUnavailable(_UNAVAILABLE) from e
        if self._holds is None:
            raise WranglerUnavailable(_UNAVAILABLE)

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
