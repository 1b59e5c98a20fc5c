"""A class-data-sharing archive of Spark's classes for every JVM the tests start.

A Spark JVM spends most of a short test's CPU loading and verifying the same ten thousand classes. The JDK can
map them from an archive instead (AppCDS): one small Spark application is run once with
``-XX:ArchiveClassesAtExit``, and every later driver and executor (they share the classpath
``pyspark/conf:pyspark/jars/*``) starts with ``-XX:SharedArchiveFile``. A trivial local-cluster application
then costs 10 CPU-seconds instead of 16. A JVM whose classpath differs (Spark's launcher, javac) cannot use the
archive and starts as before; the JDK's note saying so is silenced so that tests reading a JVM's output see
none. Nothing in the product depends on this: it applies to the test processes only.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

#: The application whose classes are archived: what most tests start with (SQL with a shuffle and a join,
#: Parquet written and read, an RDD shuffle), in local mode so that the executor's side loads in this JVM too.
_WORKLOAD = """
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
df = spark.range(20000).selectExpr("id % 97 AS k", "id AS v", "cast(id AS double) / 7 AS d")
df.write.parquet(sys.argv[1])
back = spark.read.parquet(sys.argv[1])
back.groupBy("k").agg({"v": "sum", "d": "avg"}).join(back.groupBy("k").count(), "k").orderBy("k").collect()
spark.sparkContext.parallelize(range(1000), 4).map(lambda x: (x % 7, x)).reduceByKey(lambda a, b: a + b).collect()
spark.stop()
"""

_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def _key() -> str:
    """What the archive depends on: the JDK and the jars on Spark's classpath."""
    import pyspark

    jars = sorted(p.name for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    return hashlib.sha256("\n".join([java, pyspark.__version__, *jars]).encode()).hexdigest()[:16]


def share_spark_classes(cache: Path) -> None:
    """Make (once per JDK and Spark) the archive in ``cache`` and have every JVM started from now on use it.

    Any failure leaves the JVMs as they were: the archive saves time, never decides an outcome.
    """
    if "SharedArchiveFile" in os.environ.get("JAVA_TOOL_OPTIONS", ""):
        return
    try:
        archive = cache / f"spark-{_key()}.jsa"
        if not archive.is_file():
            _dump(archive)
    except (OSError, subprocess.SubprocessError) as e:
        print(f"No class-data-sharing archive for the tests' JVMs ({e}): they start without one", file=sys.stderr)
        return
    os.environ["JAVA_TOOL_OPTIONS"] = (f"{os.environ.get('JAVA_TOOL_OPTIONS', '')} "
                                       f"-XX:SharedArchiveFile={archive} {_QUIET}").strip()


def _dump(archive: Path) -> None:
    part = archive.with_name(f"{archive.name}.{os.getpid()}.part")
    with tempfile.TemporaryDirectory(prefix="jvm-archive-") as work:
        env = {**os.environ, "JAVA_TOOL_OPTIONS": f"{os.environ.get('JAVA_TOOL_OPTIONS', '')} "
                                                  f"-XX:ArchiveClassesAtExit={part} {_QUIET}"}
        subprocess.run([sys.executable, "-c", _WORKLOAD, str(Path(work) / "data")], env=env, cwd=work,
                       capture_output=True, timeout=300, check=True)
        if not part.is_file():
            raise OSError("the JVM wrote no archive")
        os.replace(part, archive)  # atomic: a concurrent session sees a whole archive or none
