"""A JVM application under spark-submit: JavaSerializer, IO encryption and zstd with Riffle.

These break naive byte concatenation of shuffle blocks (a second Java serialization header; a
separately encrypted block); Riffle keeps sub-block boundaries, so results must not change.
"""

import hashlib
import os
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

import pyarrow.compute as pc
import pytest

from spark_plugin.jar import find_javac, pyspark_jars_dir
from spark_plugin.telemetry_reader import read_telemetry

pytestmark = [pytest.mark.spark, pytest.mark.integration]

SOURCE = Path(__file__).resolve().parent / "java" / "JvmShuffleApp.java"
HARD_MODE = ["--conf", "spark.io.encryption.enabled=true", "--conf", "spark.io.compression.codec=zstd"]


@pytest.fixture(scope="module")
def app_jar(tmp_path_factory):
    """The test application, compiled with javac against pyspark's jars."""
    out = tmp_path_factory.mktemp("jvmapp")
    subprocess.run([find_javac(), "--release", "17", "-cp", f"{pyspark_jars_dir()}/*", "-d", str(out / "classes"),
                    str(SOURCE)], check=True, capture_output=True)
    jar = out / "jvm-shuffle-app.jar"
    with zipfile.ZipFile(jar, "w") as z:
        for cls in (out / "classes").rglob("*.class"):
            z.write(cls, cls.relative_to(out / "classes").as_posix())
    return jar


def submit(app_jar, tmp_path, extra):
    import pyspark

    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "SPARK_HOME": str(Path(pyspark.__file__).parent),
           "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    cmd = [str(bin_dir / "spark-submit"), "--master", "local-cluster[2,1,1024]", "--class", "JvmShuffleApp",
           *extra, str(app_jar)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr[-4000:]
    lines = dict(line.split(" ", 1) for line in run.stdout.splitlines() if line.startswith(("RESULT", "APP")))
    return lines["RESULT"], lines["APP"]


def riffle_flags(telemetry_dir) -> list[str]:
    out = subprocess.run([sys.executable, "-m", "spark_plugin", "submit-args", "--features", "telemetry,riffle",
                          "--conf", "spark.riffle.merge.fanIn=3", "--conf", "spark.riffle.bestEffort.fraction=1.0",
                          "--conf", f"spark.sparkrm.telemetry.dir={telemetry_dir}"],
                         capture_output=True, text=True, check=True)
    return shlex.split(out.stdout)


def expected_result() -> str:
    """What JvmShuffleApp prints, computed here: the groupByKey sums and the sortByKey order."""
    sums = {}
    for i in range(30_000):
        sums[(i * 7919) % 211] = sums.get((i * 7919) % 211, 0) + i
    text = "{" + ", ".join(f"{k}={v}" for k, v in sorted(sums.items())) + "}"
    pairs = sorted(((i * 31 % 30_011, i) for i in range(30_000)), reverse=True)  # 30011 is prime: no ties
    text += "".join(f"{k}:{v}," for k, v in pairs)
    return f"{len(sums)} {len(pairs)} {hashlib.sha256(text.encode()).hexdigest()}"


def test_java_serialized_encrypted_zstd_shuffles_give_vanilla_results(app_jar, tmp_path):
    riffle, app_id = submit(app_jar, tmp_path, HARD_MODE + riffle_flags(tmp_path / "telemetry"))
    assert riffle == expected_result()
    records = read_telemetry(tmp_path / "telemetry" / f"{app_id}.telemetry.jsonl")
    reads = records["shuffle_read"]
    assert pc.sum(reads["mergedBlocks"]).as_py() > 0 and pc.sum(reads["fallbacks"]).as_py() == 0
    assert pc.all(pc.equal(records["task"]["status"], "SUCCESS")).as_py()
