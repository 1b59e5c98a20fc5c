"""``sparkrm submit`` with an application file that is not there: one line and exit 2, before any JVM."""

import subprocess
import sys

import pytest


def submit(*args, cwd):
    return subprocess.run([sys.executable, "-m", "spark_plugin", "submit", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


@pytest.mark.parametrize("dry_run", [["--dry-run"], []])
def test_a_missing_application_file_is_one_line_and_exit_2(tmp_path, dry_run):
    out = submit(*dry_run, "--master", "local[1]", "missing.py", "--input", "x", cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == (f"error: the application missing.py does not exist (in {tmp_path}). Pass the path of the "
                          ".py or .jar to run: sparkrm submit [--features F] [spark-submit options] app.py|app.jar "
                          "[app arguments].\n")
    out = submit(*dry_run, str(tmp_path), cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.startswith(f"error: the application {tmp_path} is a folder. Pass")
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


def test_a_file_here_a_url_or_a_cluster_mode_driver_passes_the_dry_run(tmp_path):
    (tmp_path / "app.py").write_text("print('hi')\n")
    for app in (["app.py"], [f"file://{tmp_path / 'app.py'}"], ["hdfs:///apps/app.py"],
                ["--deploy-mode", "cluster", "missing.py"]):
        out = submit("--dry-run", *app, cwd=tmp_path)
        assert out.returncode == 0 and out.stdout.rstrip().endswith(app[-1]), out.stderr
