"""Shared fixtures: one real Spark session per test module, never one per test.

A module chooses its session by defining ``SPARK_SESSION = dict(master=...,
features=..., conf=...)`` (the pytest form of pyspark's ReusedPySparkTestCase
``conf()`` override); the defaults are a two-executor ``local-cluster`` with
sparkrm's default features. A conf value may contain ``{session_dir}``, a
temporary folder of the module (also the ``session_dir`` fixture). Starting a
cluster takes 10-20 s, so tests inside a module share it and read telemetry
after a ``mark()``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

DEFAULT_SESSION = dict(master="local-cluster[2,1,1024]", features=None, conf={})


def ini_spark_options(config) -> dict:
    """The ``spark_options`` lines of pytest.ini as a dict (pytest-spark's format)."""
    options = {}
    for line in config.getini("spark_options"):
        sep = ":" if ":" in line else "="
        key, value = (s.strip() for s in line.split(sep, 1))
        options[key] = value
    return options


@pytest.fixture(scope="module")
def session_dir(tmp_path_factory) -> Path:
    """A temporary folder shared by the tests of one module and its Spark session."""
    return tmp_path_factory.mktemp("session")


@pytest.fixture(scope="module")
def spark(request, session_dir):
    """A SparkSession for the whole module, configured by its ``SPARK_SESSION``."""
    import spark_plugin

    spec = {**DEFAULT_SESSION, **getattr(request.module, "SPARK_SESSION", {})}
    conf = {**ini_spark_options(request.config),
            **{k: str(v).replace("{session_dir}", str(session_dir)) for k, v in spec["conf"].items()}}
    session = spark_plugin.session(spec["master"], spec["features"],
                                   app_name=request.module.__name__, conf=conf)
    app_id = session.sparkContext.applicationId
    yield session
    stop_and_clean(session, app_id)


def stop_and_clean(session, app_id: str) -> None:
    """Stop ``session`` (again, if a test did), its driver JVM, and the worker folders of local-cluster.

    The driver JVM must go too: spark-submit turns the first session's ``--conf`` entries into
    JVM system properties, which every later SparkConf in that JVM would inherit, so one
    module's settings (a fault switched on, say) would leak into the next module's session.
    """
    import pyspark

    session.stop()
    shutdown_driver_jvm()
    shutil.rmtree(Path(pyspark.__file__).parent / "work" / app_id, ignore_errors=True)


def shutdown_driver_jvm() -> None:
    """End pyspark's gateway JVM, so that the next session starts a fresh one with its own conf."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    gateway.shutdown()
    if proc is not None:
        proc.stdin.close()  # the gateway JVM exits when its stdin closes
        proc.wait(timeout=60)
    SparkContext._gateway = None
    SparkContext._jvm = None
