"""Switching sparkrm on: for a SparkSession builder, a ready session, or spark-submit flags.

All three produce the same configuration (:func:`plugin_conf`): the jar on
``spark.jars``, the plugin on ``spark.plugins``, and the keys of the selected
features. Existing ``spark.jars`` and ``spark.plugins`` values are kept and
extended, never replaced.
"""

from __future__ import annotations

import importlib
import os
import shlex
import sys
from typing import Iterable, Mapping

from .errors import ConfigError
from .features import DEFAULT_FEATURES, FEATURES, feature_conf
from .jar import check_java_home, jar_path
from .keys import KEYS, PLUGIN_CLASS

def plugin_conf(features: Iterable[str] | str | None = None, conf: Mapping[str, str] | None = None,
                *, existing: Mapping[str, str] | None = None) -> dict:
    """Return the Spark configuration that activates sparkrm.

    Parameters
    ----------
    features : iterable of str or str, default=None
        Feature names (see :data:`spark_plugin.features.FEATURES`), or a
        comma-separated string. ``None`` selects the defaults (telemetry); an
        empty list loads the plugin with every feature off.
    conf : mapping of str to str, default=None
        Extra keys, e.g. ``{"spark.sparkrm.telemetry.dir": "/tmp/t"}``. A key
        a feature also sets must agree with it.
    existing : mapping of str to str, default=None
        Configuration already set; list keys (``spark.jars``,
        ``spark.plugins``) are extended rather than replaced.

    Returns
    -------
    dict
        Only the entries to set.

    Raises
    ------
    ConfigError
        For an unknown feature, an unknown or invalid sparkrm key, a broken rule
        between keys, or a value set by the user that a feature would replace.
    """
    existing = dict(existing or {})
    user = {str(k): _conf_string(v) for k, v in (conf or {}).items()}
    selected = DEFAULT_FEATURES if features is None else features
    current = {**existing, **user}
    entries = {**feature_conf(selected, current), **user}
    entries["spark.jars"] = _append(current.get("spark.jars"), str(jar_path()))
    entries["spark.plugins"] = _append(current.get("spark.plugins"), PLUGIN_CLASS)
    KEYS.validate({**existing, **entries})
    return entries


def configure(builder, features: Iterable[str] | str | None = None,
              conf: Mapping[str, str] | None = None):
    """Add sparkrm to a ``SparkSession.Builder`` and return the same builder.

    You keep control of master, app name and every other setting; this only
    adds the jar, the plugin and the feature keys, validated before any JVM
    starts.

    Parameters
    ----------
    builder : pyspark.sql.SparkSession.Builder
        The builder to extend.
    features, conf
        As in :func:`plugin_conf`.

    Returns
    -------
    pyspark.sql.SparkSession.Builder
        ``builder``, so that the call chains into ``.getOrCreate()``.

    Raises
    ------
    TypeError
        If ``builder`` is not a ``SparkSession.Builder``.
    ConfigError
        For an unknown feature or an invalid key.

    Examples
    --------
    >>> from pyspark.sql import SparkSession
    >>> import spark_plugin
    >>> builder = SparkSession.builder.master("local[2]").appName("demo")
    >>> builder = spark_plugin.configure(builder, features=["telemetry"])
    >>> spark = builder.getOrCreate()  # doctest: +SKIP
    """
    from pyspark.sql import SparkSession

    if not isinstance(builder, SparkSession.Builder):
        raise TypeError(f"configure() takes a pyspark.sql.SparkSession.Builder, got "
                        f"{type(builder).__name__}. Pass SparkSession.builder (before getOrCreate()).")
    existing = {k: str(v) for k, v in builder._options.items()}
    for key, value in plugin_conf(features, conf, existing=existing).items():
        builder.config(key, value)
    return builder


def session(master: str = "local-cluster[2,1,1024]", features: Iterable[str] | str | None = None,
            *, app_name: str = "sparkrm", conf: Mapping[str, str] | None = None):
    """Start (or return the running) SparkSession with sparkrm enabled.

    Works for ``local[*]``, ``local-cluster[E,C,M]`` (E executor JVMs with C
    cores and M MiB each, on this machine) and ``spark://host:port`` masters.
    Executors use this interpreter for Python workers unless
    ``spark.pyspark.python`` is given.

    Parameters
    ----------
    master : str, default="local-cluster[2,1,1024]"
        Spark master URL.
    features, conf
        As in :func:`plugin_conf`; ``conf`` may also hold any Spark key.
    app_name : str, default="sparkrm"
        Application name shown in the Spark UI.

    Returns
    -------
    pyspark.sql.SparkSession
        With Wrangler's Python side started when ``spark.wrangler.enabled`` is true: it gives the
        driver JVM, which decides, its model (see :func:`spark_plugin.wrangler.start`).

    Raises
    ------
    ConfigError
        For an invalid key, or a ``JAVA_HOME`` no JVM can start from (checked before pyspark launches one).
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if SparkContext._gateway is None and not os.environ.get("PYSPARK_GATEWAY_PORT"):  # this call starts the JVM
        check_java_home()
    builder = SparkSession.builder.master(master).appName(app_name)
    python = dict(conf or {}).get("spark.pyspark.python", sys.executable)
    builder.config("spark.pyspark.python", python)
    # pyspark's RDD API ignores that key and sends PYSPARK_PYTHON (default: whatever `python3`
    # is on PATH) with every function, so a venv's packages would be missing on the workers.
    os.environ.setdefault("PYSPARK_PYTHON", python)
    spark = configure(builder, features, conf).getOrCreate()
    settings = spark.sparkContext.getConf()
    for feature in FEATURES.values():
        if feature.on_session and settings.get(feature.switch, "false").strip().lower() == "true":
            module, _, function = feature.on_session.partition(":")
            getattr(importlib.import_module(module), function)(spark)
    return spark


def submit_args(features: Iterable[str] | str | None = None,
                conf: Mapping[str, str] | None = None) -> list[str]:
    """Return ``spark-submit`` arguments that activate sparkrm.

    Examples
    --------
    >>> args = submit_args(features=[])
    >>> args[0], args[2]
    ('--jars', '--conf')
    """
    entries = plugin_conf(features, conf)
    args = ["--jars", entries.pop("spark.jars")]
    for key, value in entries.items():
        args += ["--conf", f"{key}={value}"]
    return args


def format_submit_args(args: list[str]) -> str:
    """Quote ``args`` for pasting into a shell."""
    return " ".join(shlex.quote(a) for a in args)


def _append(current: str | None, item: str) -> str:
    parts = [p for p in (current or "").split(",") if p.strip()]
    return ",".join(parts if item in parts else parts + [item])


def _conf_string(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        raise ConfigError("Configuration values cannot be None; leave the key out for its default.")
    return str(value)
