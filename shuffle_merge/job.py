"""Per-job Riffle settings: merge one job's shuffles differently from the application's default.

The driver reads ``spark.riffle.*`` local properties of the job that runs a map stage (thesis:
policies and parameters can be set per job). This helper validates them with the same rules as
the configuration and restores the previous values afterwards.
"""

from __future__ import annotations

from contextlib import contextmanager

from spark_plugin.keys import KEYS

#: Settings a job may override, by argument name.
JOB_SETTINGS = {
    "enabled": "spark.riffle.enabled",
    "policy": "spark.riffle.merge.policy",
    "fan_in": "spark.riffle.merge.fanIn",
    "target_block_bytes": "spark.riffle.merge.targetBlockBytes",
    "max_fan_in": "spark.riffle.merge.maxFanIn",
    "leftovers": "spark.riffle.merge.leftovers",
    "best_effort": "spark.riffle.bestEffort.fraction",
    "best_effort_timeout": "spark.riffle.bestEffort.timeout",
    "max_wait_ratio": "spark.riffle.bestEffort.maxWaitRatio",
}


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
    sc = spark.sparkContext
    previous = {key: sc.getLocalProperty(key) for key in values}
    for key, value in values.items():
        sc.setLocalProperty(key, value)
    try:
        yield
    finally:
        for key, value in previous.items():
            sc.setLocalProperty(key, value)


def _conf_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
