"""sparkrm's Spark plugin: one jar, one ``spark.plugins`` class, Python API and CLI.

Public API:

* :func:`session` / :func:`configure` / :func:`submit_args`: switch the plugin
  and its features on (a session, a builder, or spark-submit flags);
* :func:`telemetry` / :class:`Telemetry` / :func:`read_telemetry`: per-task,
  stage, job and executor records as Arrow tables;
* :func:`jar_path`: the jar, built against the installed pyspark when needed;
* :data:`KEYS`: every configuration key, with type, default and range.

Submodules that need pyspark or pyarrow load on first use, so ``setup.py`` and
the CLI can import this package without them.
"""

from .errors import ConfigError, JarError, SparkrmError, UnsupportedSparkVersion
from .features import FEATURES
from .jar import jar_path
from .keys import KEYS, PLUGIN_CLASS

from ._version import __version__
from .moved import keep_old_paths

_LAZY = {
    "configure": "activation", "session": "activation", "submit_args": "activation",
    "plugin_conf": "activation",
    "Telemetry": "telemetry_reader", "TelemetryUnavailable": "telemetry_reader",
    "telemetry": "telemetry_reader", "read_telemetry": "telemetry_reader",
    "summarize_tasks": "telemetry_reader",
}

__all__ = ["ConfigError", "FEATURES", "JarError", "KEYS", "PLUGIN_CLASS", "SparkrmError",
           "UnsupportedSparkVersion", "__version__", "jar_path", *_LAZY]


def __getattr__(name):
    if name in _LAZY:
        import importlib

        module = importlib.import_module(f".{_LAZY[name]}", __name__)
        return getattr(module, name)
    raise AttributeError(f"module 'spark_plugin' has no attribute {name!r}")


keep_old_paths({"spark_plugin.curves": "spark_plugin.shared.curves",
                "spark_plugin.rotary.criteria": "spark_plugin.shared.criteria",
                **{f"spark_plugin.utility{m}": f"spark_plugin.shared.utility{m}"
                   for m in ("", ".allocator", ".mpc", ".templates")}})
