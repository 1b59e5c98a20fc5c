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


def test_submit_args_with_a_bad_value_exits_2_and_prints_a_flag_spark_submit_rejects():
    out = run_cli("submit-args", "--conf", "spark.sparkrm.telemetry.bufferRecords=10")
    assert out.returncode == 2
    assert "spark.sparkrm.telemetry.bufferRecords must be an integer in [1000, 100000000]. Got '10'." in out.stderr
    # `spark-submit $(... submit-args ...) app.py` must then fail instead of running without the plugin
    assert out.stdout.split() == ["--sparkrm-configuration-error-see-the-message-above"]


def test_submit_args_rejects_conf_without_equals():
    out = run_cli("submit-args", "--conf", "spark.sparkrm.telemetry.dir")
    assert out.returncode == 2 and "--conf takes KEY=VALUE" in out.stderr


def test_submit_dry_run_merges_with_what_the_user_set(tmp_path):
    props = tmp_path / "defaults.conf"
    props.write_text("spark.plugins = com.example.Other\nspark.riffle.merge.fanIn 20\n")
    (tmp_path / "app.py").write_text("print('the application')\n")
    out = run_cli("submit", "--features", "telemetry,riffle", "--dry-run", "--master", "local[2]", "--jars", "/opt/a.jar",
                  "--properties-file", str(props), "--conf", "spark.executor.memory=2g", "app.py", "--input", "x",
                  cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    argv = out.stdout.split()
    assert argv[0].endswith("spark-submit") and argv[-3:] == ["app.py", "--input", "x"]
    assert argv[argv.index("--jars") + 1] == f"/opt/a.jar,{spark_plugin.jar_path()}"
    confs = [argv[i + 1] for i, a in enumerate(argv) if a == "--conf"]
    assert "spark.executor.memory=2g" in confs and "spark.riffle.enabled=true" in confs
    assert f"spark.plugins=com.example.Other,{spark_plugin.PLUGIN_CLASS}" in confs


def test_submit_refuses_before_any_jvm_starts():
    out = run_cli("submit", "--features", "riffle", "--conf", "spark.shuffle.manager=com.example.Celeborn", "app.py")
    assert out.returncode == 2
    assert ("features=['riffle'] set spark.shuffle.manager=dev.sparkrm.riffle.RiffleShuffleManager, but your "
            "configuration sets it to 'com.example.Celeborn'; sparkrm never replaces a value you set.") in out.stderr
    assert "Traceback" not in out.stderr
    out = run_cli("submit", "--features", "telemetry", "--conf", "spark.rifle.merge.fanIn=3", "app.py")
    assert out.returncode == 2 and "Did you mean spark.riffle.merge.fanIn?" in out.stderr
    out = run_cli("submit", "--master")
    assert out.returncode == 2 and "--master needs a value" in out.stderr
    out = run_cli("submit", "--master", "local")
    assert out.returncode == 2 and "no application to submit" in out.stderr


def test_validate_checks_a_spark_defaults_file(tmp_path):
    good = tmp_path / "good.conf"
    good.write_text("# comment\nspark.executor.memory 2g\nspark.sparkrm.telemetry.enabled   true\n")
    assert run_cli("validate", str(good)).returncode == 0
    bad = tmp_path / "bad.conf"
    bad.write_text("spark.sparkrm.telemetry.enabeld=true\n")
    out = run_cli("validate", str(bad))
    assert out.returncode == 2
    assert "Did you mean spark.sparkrm.telemetry.enabled?" in out.stderr


def test_validate_reads_java_properties_and_checks_rules_between_keys(tmp_path):
    continued = tmp_path / "continued.conf"
    continued.write_text("spark.riffle.enabled = true\nspark.shuffle.manager = dev.sparkrm.riffle.\\\n"
                         "    RiffleShuffleManager\n")
    out = run_cli("validate", str(continued))
    assert out.returncode == 0, out.stderr
    clash = tmp_path / "clash.conf"
    clash.write_text("spark.riffle.enabled true\nspark.shuffle.manager sort\nspark.wrangler.enabled true\n"
                     "spark.sparkrm.telemetry.enabled false\n")
    out = run_cli("validate", str(clash))
    assert out.returncode == 2
    assert "spark.riffle.enabled=true needs spark.shuffle.manager=dev.sparkrm.riffle.RiffleShuffleManager, but " \
           "spark.shuffle.manager is 'sort'." in out.stderr
    assert "spark.wrangler.enabled=true needs spark.sparkrm.telemetry.enabled=true" in out.stderr
    binary = tmp_path / "binary.conf"
    binary.write_bytes(bytes(range(256)))
    out = run_cli("validate", str(binary))
    assert out.returncode == 2 and "is not a text file" in out.stderr and "Traceback" not in out.stderr


def test_generated_docs_are_up_to_date():
    out = run_cli("docs")
    assert out.returncode == 0, out.stderr


def test_the_shipped_spark_defaults_example_is_valid():
    assert run_cli("validate", str(PROJECT / "conf" / "spark-defaults.conf")).returncode == 0
