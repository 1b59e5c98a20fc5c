"""A ``JAVA_HOME`` no JVM can start from is refused in one line before pyspark tries to launch one."""

import os
import subprocess
import sys
import textwrap

import pytest

from spark_plugin.jar import check_java_home

SESSION = textwrap.dedent("""
    import spark_plugin
    from spark_plugin.errors import SparkrmError
    try:
        spark_plugin.session("local[1]", features=[])
    except SparkrmError as e:
        print(type(e).__name__, e)
""")


def run(args, java_home, cwd):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, cwd=cwd,
                          env={**os.environ, "JAVA_HOME": str(java_home)})


def fake_jdk(folder, version: str):
    """A folder laid out like a JDK of ``version``: an executable bin/java and a release file."""
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "java").write_text("#!/bin/sh\nexit 1\n")
    (folder / "bin" / "java").chmod(0o755)
    (folder / "release").write_text(f'JAVA_VERSION="{version}"\n')
    return folder


@pytest.mark.parametrize("version, problem", [
    (None, "JAVA_HOME=/nonexistent has no executable bin/java, so Spark cannot start its JVM."),
    ("11.0.2", "JAVA_HOME={jdk} is Java 11; Spark 4."),
    ("1.8.0_392", "JAVA_HOME={jdk} is Java 8; Spark 4."),
])
def test_session_refuses_a_broken_java_home_in_one_line_naming_it_and_the_fix(tmp_path, version, problem):
    jdk = "/nonexistent" if version is None else fake_jdk(tmp_path / "jdk", version)
    out = run(["-c", SESSION], jdk, tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ConfigError " + problem.format(jdk=jdk)) and out.stdout.count("\n") == 1
    assert "Point JAVA_HOME at a JDK 17" in out.stdout and "or unset it" in out.stdout
    assert "Traceback" not in out.stderr and "JAVA_GATEWAY" not in out.stderr  # no JVM launch was tried


@pytest.mark.parametrize("version", ["17.0.15", "21", "25.0.1"])
def test_a_java_home_of_java_17_or_newer_passes(tmp_path, monkeypatch, version):
    monkeypatch.setenv("JAVA_HOME", str(fake_jdk(tmp_path / "jdk", version)))
    check_java_home()


def test_rotary_sql_says_it_in_one_line_and_exits_2(tmp_path):
    out = run(["-m", "spark_plugin.rotary", "sql", "SELECT 1"], "/nonexistent", tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("error: JAVA_HOME=/nonexistent has no executable bin/java") and \
        out.stderr.count("\n") == 1
