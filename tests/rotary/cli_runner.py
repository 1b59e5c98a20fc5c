"""``python -m spark_plugin.rotary COMMAND ...`` for the tests of what it refuses before Spark starts.

:func:`run_cli` calls the command line's ``main`` in the test's own process: an interpreter per call cost a
second of imports each (scipy and pandas), 20 CPU-seconds over the argument tests, and told nothing more about
an argument check. :func:`run_cli_process` runs the real ``python -m`` process, for the few tests that check
the entry point and a whole process's stderr. Both give Spark a ``SPARK_HOME`` whose ``spark-submit`` only
records that something tried to start it, and say whether something did.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]
#: What a Python process prints no warning for unless told to (its default filters, outside ``__main__``).
_SILENT = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


@dataclass(frozen=True)
class Ran:
    """What a command returned (None: it raised, as when Spark could not start) and printed."""

    returncode: int | None
    stdout: str
    stderr: str


def _recording_spark_home(tmp_path: Path) -> tuple[Path, Path]:
    home, marker = tmp_path / "spark-home", tmp_path / "spark-started"
    (home / "bin").mkdir(parents=True, exist_ok=True)
    submit = home / "bin" / "spark-submit"
    submit.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    submit.chmod(0o755)
    return home, marker


def run_cli(tmp_path: Path, command: str, *argv: str, **env: str) -> tuple[Ran, bool]:
    """``main([command, *argv])`` in this process, in ``tmp_path``, with ``env`` set; its exit status and output,
    and whether it tried to start Spark.

    The output is what the process would print on its streams: stdout and stderr, a log record at WARNING or
    above (a process prints it on stderr) and a warning a process shows by default. A start of Spark reaches
    spark-submit only while this process runs no JVM (tests/conftest.py ends each module's): with one up, the
    command runs as a process instead (:func:`run_cli_process`).
    """
    from pyspark import SparkContext

    from spark_plugin.rotary.__main__ import main

    if SparkContext._gateway is not None or os.environ.get("PYSPARK_GATEWAY_PORT"):
        return run_cli_process(tmp_path, command, *argv, **env)  # a start would not reach spark-submit here
    home, marker = _recording_spark_home(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    to_stderr = logging.StreamHandler(err)
    to_stderr.setLevel(logging.WARNING)
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        patch.setenv("SPARK_HOME", str(home))
        for name, value in env.items():
            patch.setenv(name, value)
        patch.chdir(tmp_path)
        logging.getLogger().addHandler(to_stderr)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = main([command, *argv])
                except SystemExit as e:  # argparse's refusal
                    code = e.code
                except Exception as e:  # noqa: BLE001 - what the process would end with: Spark did not start
                    code = None
                    print(f"{type(e).__name__}: {e}", file=err)
        finally:
            logging.getLogger().removeHandler(to_stderr)
    for w in caught:
        if not issubclass(w.category, _SILENT):
            err.write(warnings.formatwarning(w.message, w.category, w.filename, w.lineno))
    return Ran(code, out.getvalue(), err.getvalue()), marker.exists()


def run_cli_process(tmp_path: Path, command: str, *argv: str, **env: str) -> tuple[Ran, bool]:
    """``python -m spark_plugin.rotary command ARGV`` as a process (see :func:`run_cli`)."""
    home, marker = _recording_spark_home(tmp_path)
    env = {**os.environ, "SPARK_HOME": str(home), "PYTHONPATH": str(PROJECT), **env}
    run = subprocess.run([sys.executable, "-m", "spark_plugin.rotary", command, *argv], capture_output=True,
                         text=True, env=env, cwd=tmp_path, timeout=300)
    return Ran(run.returncode, run.stdout, run.stderr), marker.exists()
