"""A new user's path: spark-submit with only the printed flags, on a real local-cluster."""

import json
import os
import shlex
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from spark_plugin.jar import find_javac, pyspark_jars_dir
from spark_plugin.keys import KEYS
from spark_plugin.telemetry_reader import read_telemetry

pytestmark = [pytest.mark.spark, pytest.mark.integration]

SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"

APP = textwrap.dedent('''
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("submitted-app").getOrCreate()
    sc = spark.sparkContext
    sc.setJobGroup("submitted", "6 maps x 4 reducers")
    counts = dict(sc.parallelize(range(60000), 6).map(lambda x: (x % 100, 1))
                  .reduceByKey(lambda a, b: a + b, 4).collect())
    assert counts == {k: 600 for k in range(100)}, counts
    print("APP-OK", sc.applicationId)
    spark.stop()
''')


def printed_flags(*cli_args) -> list[str]:
    out = subprocess.run([sys.executable, "-m", "spark_plugin", "submit-args", *cli_args],
                         capture_output=True, text=True, check=True)
    return shlex.split(out.stdout)


def new_user_env(tmp_path, **more) -> dict:
    """A new user's environment: this Python's bin on the PATH, a fresh HOME, nothing else of ours but the
    tests' short-lived-JVM options (tests/conftest.py), which change no behaviour and halve the JVMs' CPU."""
    return {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(tmp_path),
            "JAVA_TOOL_OPTIONS": os.environ["JAVA_TOOL_OPTIONS"], **more}


def spark_submit(tmp_path, master, flags, timeout=300):
    app = tmp_path / "app.py"
    app.write_text(APP)
    env = new_user_env(tmp_path, PYSPARK_PYTHON=sys.executable)
    return subprocess.run([str(SPARK_SUBMIT), "--master", master, *flags, str(app)],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=tmp_path)


@pytest.fixture(scope="module", autouse=True)
def sparkrm_submit_run(tmp_path_factory):
    """``sparkrm submit`` of the application, started with the module and run beside its other tests (its
    own folder and JVM; it mostly waits on Spark starting); its test waits for it and checks what it did."""
    folder = tmp_path_factory.mktemp("sparkrm-submit")
    (folder / "app.py").write_text(APP)
    with open(folder / "stdout", "w") as stdout, open(folder / "stderr", "w") as stderr:
        proc = subprocess.Popen([str(Path(sys.executable).parent / "sparkrm"), "submit", "--features", "telemetry",
                                 "--master", "local[1]", "--conf",
                                 f"spark.sparkrm.telemetry.dir={folder / 'telemetry'}", str(folder / "app.py")],
                                stdout=stdout, stderr=stderr,
                                env=new_user_env(folder, PYSPARK_PYTHON=sys.executable), cwd=folder)
    yield proc, folder
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_spark_submit_with_only_the_printed_flags_records_every_task(tmp_path):
    telemetry_dir = tmp_path / "telemetry"
    flags = printed_flags("--features", "telemetry", "--conf", f"spark.sparkrm.telemetry.dir={telemetry_dir}")
    run = spark_submit(tmp_path, "local-cluster[2,1,1024]", flags)
    assert run.returncode == 0 and "APP-OK" in run.stdout, run.stderr[-3000:]
    app_id = run.stdout.split("APP-OK")[1].split()[0]

    path = telemetry_dir / f"{app_id}.telemetry.jsonl"
    assert path.is_file() and not list(telemetry_dir.glob("*.inprogress"))
    records = read_telemetry(path)
    tasks = [t for t in records["task"].to_pylist() if t["jobGroup"] == "submitted"]
    maps = [t for t in tasks if t["taskType"] == "ShuffleMapTask"]
    reduces = [t for t in tasks if t["taskType"] == "ResultTask"]
    assert sorted(t["partition"] for t in maps) == list(range(6))
    assert sorted(t["partition"] for t in reduces) == list(range(4))
    assert all(t["shuffleLocalBlocks"] + t["shuffleRemoteBlocks"] == 6 for t in reduces)
    assert sum(t["shuffleRemoteBlocks"] for t in reduces) > 0
    assert sum(t["shuffleWriteBytes"] for t in maps) == \
        sum(t["shuffleLocalBytes"] + t["shuffleRemoteBytes"] for t in reduces)
    registered = [e for e in records["executor"].to_pylist() if e["event"] == "registered"]
    assert sorted(e["executorId"] for e in registered) == ["0", "1"]


def test_bad_values_stop_the_application_with_the_message_first_and_no_stack(tmp_path):
    flags = printed_flags("--features", "") + [
        "--conf", "spark.sparkrm.telemetry.bufferRecords=10",
        "--conf", "spark.sparkrm.telemetry.enabeld=true",
        "--conf", "spark.rifle.merge.fanIn=3",
        "--conf", "spark.riffle.enabled=true"]  # without spark.shuffle.manager: a broken rule
    run = spark_submit(tmp_path, "local[1]", flags, timeout=120)
    assert run.returncode == 2 and "APP-OK" not in run.stdout
    problems = refused_with(run)  # unknown keys, then bad values, then broken rules
    assert len(problems) == 4
    assert "Did you mean spark.riffle.merge.fanIn?" in problems[0]
    assert problems[1].startswith("spark.sparkrm.telemetry.enabeld is not a sparkrm configuration key. "
                                  "Did you mean spark.sparkrm.telemetry.enabled?")
    assert problems[2] == ("spark.sparkrm.telemetry.bufferRecords must be an integer in [1000, 100000000]. Got '10'. "
                           "Set e.g. 200000 or remove it for the default (200000).")
    assert problems[3].startswith("spark.riffle.enabled=true needs spark.shuffle.manager="
                                  "dev.sparkrm.riffle.RiffleShuffleManager")


def refused_with(run) -> list[str]:
    """The problem lines under the banner of a refused application, after checking nothing else was said.

    A refused application prints the banner and one line per problem, then ends with status 2: no Java
    stack (Spark's own, from stopping a half-built context, included), no Py4J traceback.
    """
    head, banner, tail = run.stderr.partition("\nsparkrm: this application cannot start. Fix its configuration:\n")
    assert banner, run.stderr[-3000:]
    problems, _, after = tail.partition("\n\n")
    for said in (head, after):
        for trace in ("\tat ", "Traceback", "Py4J", "Exception", "Error initializing SparkContext"):
            assert trace not in said, said[-3000:]
    return problems.split("\n")


def test_a_broken_wrangler_model_ends_a_plain_spark_submit_at_start_with_one_line(tmp_path):
    """A model with the right format tag and a wrong field once ran with every decision tick failing."""
    model = tmp_path / "model.json"
    model.write_text(json.dumps({
        "format": "sparkrm-wrangler-model", "features": ["cpuIdlePct", "load1"],
        "scaler": {"scale": "oops", "offset": [0.0, 0.0]},
        "shared": {"weights": [0.0, 0.0], "intercept": -1.0, "sigmoids": [[-10.0, 0.0]], "nodes": {}, "workloads": {}},
        "nodes": {}}))
    flags = printed_flags("--features", "wrangler") + ["--conf", f"spark.wrangler.model.path={model}"]
    run = spark_submit(tmp_path, "local[1]", flags, timeout=120)
    assert run.returncode == 2 and "APP-OK" not in run.stdout
    assert refused_with(run) == [
        f"spark.wrangler.model.path={model} is not a valid Wrangler model: scaler.scale must be an array of numbers "
        f"or nulls, one per entry of features; got a string. {KEYS['spark.wrangler.model.path'].fix()}"]


JVM_APP = """
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

public class RefusedApp {
  public static void main(String[] args) {
    try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("refused"))) {
      System.out.println("APP-OK " + sc.parallelize(java.util.List.of(1, 2, 3)).count());
    }
  }
}
"""


def test_a_jvm_application_is_refused_the_same_way(tmp_path):
    """No Python at all: the model file is checked in the driver JVM, whose main thread is the application's."""
    (tmp_path / "RefusedApp.java").write_text(JVM_APP)
    subprocess.run([find_javac(), "--release", "17", "-cp", f"{pyspark_jars_dir()}/*", "-d", str(tmp_path / "classes"),
                    str(tmp_path / "RefusedApp.java")], check=True, capture_output=True)
    app = tmp_path / "app.jar"
    with zipfile.ZipFile(app, "w") as z:
        z.write(tmp_path / "classes" / "RefusedApp.class", "RefusedApp.class")
    flags = printed_flags("--features", "") + ["--conf", f"spark.wrangler.model.path={tmp_path / 'missing.json'}"]
    run = subprocess.run([str(SPARK_SUBMIT), "--master", "local[1]", "--class", "RefusedApp", *flags, str(app)],
                         capture_output=True, text=True, timeout=120, env=new_user_env(tmp_path), cwd=tmp_path)
    assert run.returncode == 2 and "APP-OK" not in run.stdout
    assert refused_with(run) == [f"spark.wrangler.model.path={tmp_path / 'missing.json'}: no such file. "
                                 f"{KEYS['spark.wrangler.model.path'].fix()}"]


def test_a_failed_submit_args_makes_spark_submit_fail(tmp_path):
    out = subprocess.run([sys.executable, "-m", "spark_plugin", "submit-args", "--conf", "spark.riffle.merge.fanIn=1"],
                         capture_output=True, text=True)
    assert out.returncode == 2
    run = spark_submit(tmp_path, "local[1]", shlex.split(out.stdout), timeout=120)  # as $(...) would paste it
    assert run.returncode != 0 and "APP-OK" not in run.stdout
    assert "Unrecognized option: --sparkrm-configuration-error-see-the-message-above" in run.stderr


def test_sparkrm_submit_validates_and_runs_the_application(sparkrm_submit_run):
    proc, folder = sparkrm_submit_run
    assert proc.wait(timeout=300) == 0 and "APP-OK" in (folder / "stdout").read_text(), \
        (folder / "stderr").read_text()[-3000:]
    assert len(list((folder / "telemetry").glob("*.telemetry.jsonl"))) == 1


def test_an_unwritable_telemetry_dir_stops_the_application(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    flags = printed_flags() + ["--conf", f"spark.sparkrm.telemetry.dir={blocker}/sub"]
    run = spark_submit(tmp_path, "local[1]", flags, timeout=120)
    assert run.returncode == 2 and "APP-OK" not in run.stdout
    assert refused_with(run)[0].startswith(
        "spark.sparkrm.telemetry.dir must be a writable local directory on the driver")
