"""The table of every sparkrm configuration key.

This is the one place a key is declared. README.md's configuration table and
``conf/spark-defaults.conf`` are generated from it (``python -m spark_plugin
docs --write``), and the JVM reads it from the jar, so add keys here only.
"""

from .config import Key, KeyTable

#: Fully qualified class names that the ``spark.*`` keys below point Spark at.
PLUGIN_CLASS = "dev.sparkrm.SparkrmPlugin"

KEYS = KeyTable([
    Key("spark.sparkrm.telemetry.enabled", "bool", "true",
        "Record per-task, per-stage, per-job and per-executor metrics in the driver "
        "(read them with `spark_plugin.telemetry(spark)`)."),
    Key("spark.sparkrm.telemetry.dir", "string", None,
        "Local directory on the driver where each application writes its telemetry as "
        "`<appId>.telemetry.jsonl` (created if missing). Unset: keep telemetry in memory only.",
        example="/tmp/sparkrm-telemetry"),
    Key("spark.sparkrm.telemetry.bufferRecords", "int", "200000",
        "How many of the most recent telemetry records the driver keeps in memory for "
        "Python to read. Older records are dropped from memory (never from the file).",
        low=1000, high=100_000_000),
])
