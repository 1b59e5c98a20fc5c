"""Per-job Riffle settings: merge one job's shuffles differently from the application's default.

The driver reads the local properties ``sparkrm.job.riffle.<name>`` of the job that runs a map
stage (thesis: policies and parameters can be set per job). They cannot be named like the
configuration keys: Spark SQL copies the session configuration, ``spark.riffle.*`` included, into
the local properties of every query, overwriting same-named ones. (That copy is also why
``spark.conf.set("spark.riffle.merge.fanIn", "20")`` changes later DataFrame jobs.) This helper
validates the values with the configuration's rules and restores the previous ones afterwards.
"""

from __future__ import annotations

from contextlib import contextmanager

from spark_plugin import local_properties
from spark_plugin.config import JOB_PREFIX
from spark_plugin.keys import KEYS

#: Settings a job may override, by argument name (the keys flagged per-job in the key table).
JOB_SETTINGS = KEYS.job_settings()


@contextmanager
def job_settings(spark, **settings):
    """Apply Riffle settings to the jobs started in this block (from this thread).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    **settings
        Any of :data:`JOB_SETTINGS`, e.g. ``fan_in=20``, ``best_effort=0.95``,
        ``enabled=False``. Values are validated like configuration values.

    Raises
    ------
    TypeError
        For an unknown setting name.
    spark_plugin.ConfigError
        For a bad value, naming the key, the value and the accepted range.

    Examples
    --------
    >>> with job_settings(spark, fan_in=40, best_effort=0.95):   # doctest: +SKIP
    ...     df.groupBy("k").count().collect()
    """
    unknown = sorted(set(settings) - set(JOB_SETTINGS))
    if unknown:
        raise TypeError(f"job_settings() got unknown setting {unknown[0]!r}; known: {', '.join(JOB_SETTINGS)}")
    values = {JOB_SETTINGS[k]: _conf_value(v) for k, v in settings.items()}
    for key, value in values.items():
        KEYS[key].parse(value)
    properties = {job_property(key): value for key, value in values.items()}
    sc = spark.sparkContext
    with local_properties.restored(sc, properties):
        for name, value in properties.items():
            sc.setLocalProperty(name, value)
        yield


def job_property(key: str) -> str:
    """The local property that overrides configuration ``key`` for one job."""
    return JOB_PREFIX + key.removeprefix("spark.")


def _conf_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
