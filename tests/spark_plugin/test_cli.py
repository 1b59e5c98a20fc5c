"""``python -m spark_plugin``: each subcommand as a user runs it."""

import subprocess
import sys
from pathlib import Path

import spark_plugin

PROJECT = Path(__file__).resolve().parents[2]


def run_cli(*args, cwd=PROJECT):
    return subprocess.run([sys.executable, "-m", "spark_plugin", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120)


def test_jar_prints_an_existing_jar():
    out = run_cli("jar")
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()).is_file()
    assert out.stdout.strip() == str(spark_plugin.jar_path())


def test_submit_args_prints_paste_ready_flags():
    out = run_cli("submit-args", "--features", "telemetry", "--conf", "spark.sparkrm.telemetry.dir=/tmp/a b")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"--jars {spark_plugin.jar_path()} --conf ")
    assert "'spark.sparkrm.telemetry.dir=/tmp/a b'" in out.stdout


def test_submit_args_with_a_bad_value_exits_2_with_the_message():
    out = run_cli("submit-args", "--conf", "spark.sparkrm.telemetry.bufferRecords=10")
    assert out.returncode == 2
    assert "spark.sparkrm.telemetry.bufferRecords must be an integer in [1000, 100000000]. Got '10'." in out.stderr


def test_submit_args_rejects_conf_without_equals():
    out = run_cli("submit-args", "--conf", "spark.sparkrm.telemetry.dir")
    assert out.returncode == 2 and "--conf takes KEY=VALUE" in out.stderr


def test_validate_checks_a_spark_defaults_file(tmp_path):
    good = tmp_path / "good.conf"
    good.write_text("# comment\nspark.executor.memory 2g\nspark.sparkrm.telemetry.enabled   true\n")
    assert run_cli("validate", str(good)).returncode == 0
    bad = tmp_path / "bad.conf"
    bad.write_text("spark.sparkrm.telemetry.enabeld=true\n")
    out = run_cli("validate", str(bad))
    assert out.returncode == 2
    assert "Did you mean spark.sparkrm.telemetry.enabled?" in out.stderr


def test_generated_docs_are_up_to_date():
    out = run_cli("docs")
    assert out.returncode == 0, out.stderr


def test_the_shipped_spark_defaults_example_is_valid():
    assert run_cli("validate", str(PROJECT / "conf" / "spark-defaults.conf")).returncode == 0
