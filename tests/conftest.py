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

import importlib.abc
import os
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

from benchmarks.common import stop_and_clean

DEFAULT_SESSION = dict(master="local-cluster[2,1,1024]", features=None, conf={})

#: Every JVM the tests start (Spark drivers and executors, spark-submit, javac) runs short: C1
#: alone compiles fast enough and the serial collector adds no threads on two cores. This halved
#: the CPU time of the Riffle corruption module (94 s to 42 s). :func:`pytest_configure` adds a
#: class-data-sharing archive of Spark's classes (see :mod:`tests.jvm_archive`).
os.environ.setdefault("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")

#: Fixtures that start Spark (a session, a cluster, a Spark subprocess) or TensorFlow: a test
#: using one gets the ``spark`` or ``tf`` marker, so ``-m "not spark and not tf"`` is the fast lane.
SPARK_FIXTURES = {"spark", "vanilla_results", "standalone_app"}
TF_FIXTURES = {"tf_det"}


#: The slowest modules, slowest first, with their summed test time in seconds (one profile of the whole
#: suite under load, issue 55). Under ``--dist loadfile`` with ``--no-loadscope-reorder`` (pytest.ini)
#: the workers take modules in collection order, so these go first and the many quick modules fill the
#: gaps at the end: a slow module started last would set the suite's wall time on its own.
SLOW_MODULES = {  # paths under tests/; summed junit test time of one full run under load (issue 55)
    "rotary/test_rewrite.py": 276,
    "rotary/test_progressive.py": 120,
    "rotary/test_cli_sql.py": 118,
    "rotary/test_suspension.py": 114,
    "rotary/test_arbiter.py": 91,
    "tf_packing/test_tuner_on_executors.py": 82,
    "tf_packing/test_pack.py": 81,
    "slaq/test_spark_training.py": 85,  # test_estimators.py merged in
    "tf_packing/test_keras_tuner_api.py": 73,
    "tpch/test_cli.py": 67,
    "shuffle_merge/test_riffle_cluster.py": 64,
    "tf_packing/test_model_pool.py": 62,
    "cluster/test_emulated_cluster.py": 61,
    "advisor/test_event_logs.py": 57,
    "advisor/test_telemetry_runs.py": 52,
    "wrangler/test_cluster.py": 49,
    "rotary/test_benchmark.py": 49,
    "rotary/test_cli.py": 48,
    "shuffle_merge/test_riffle_benchmark.py": 43,
}


def _module_rank(item) -> int:
    """Where ``item``'s module goes: by its place in :data:`SLOW_MODULES`, every other module after them."""
    order = list(SLOW_MODULES)
    path = Path(item.path).relative_to(Path(__file__).parent).as_posix()
    return order.index(path) if path in SLOW_MODULES else len(order)


def pytest_collection_modifyitems(config, items):
    items.sort(key=_module_rank)  # stable: each module's tests keep their order and stay together
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & SPARK_FIXTURES:
            item.add_marker(pytest.mark.spark)
        if names & TF_FIXTURES:
            item.add_marker(pytest.mark.tf)


@pytest.hookimpl(trylast=True)  # after pytest-spark has read SPARK_HOME
def pytest_configure(config):
    """In a lane without Spark or TensorFlow, make an unmarked test that starts them fail loudly.

    Markers are the lanes' only contract: a test that would start a JVM or import TensorFlow
    without its marker fails in the fast lane with a message saying so, instead of slowing it.
    Spark is replaced by a ``SPARK_HOME`` whose ``spark-submit`` only prints that message.
    """
    lane = config.getoption("markexpr", "") or ""
    if "not spark" in lane:
        home = Path(tempfile.mkdtemp(prefix="no-spark-"))
        script = home / "bin" / "spark-submit"
        script.parent.mkdir()
        script.write_text("#!/bin/sh\necho 'This test lane runs no Spark (-m \"not spark\"): mark the test spark, "
                          "or give it the spark fixture.' >&2\nexit 1\n")
        script.chmod(0o755)
        (home / "python" / "lib").mkdir(parents=True)  # what pytest-spark's findspark looks for
        zipfile.ZipFile(home / "python" / "lib" / "py4j-0-src.zip", "w").close()
        os.environ["SPARK_HOME"] = str(home)
    if "not tf" in lane:
        sys.meta_path.insert(0, _NoTensorFlow())
    if "not spark" not in lane and not hasattr(config, "workerinput"):  # xdist's workers inherit the variable
        from tests.jvm_archive import share_spark_classes

        share_spark_classes(Path(config.cache.makedir("jvm-archive")))


class _NoTensorFlow(importlib.abc.MetaPathFinder):
    """Refuses to import TensorFlow and Keras (see :func:`pytest_configure`)."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tensorflow", "keras"):
            raise ImportError(f"{name} is off in this lane (-m 'not tf'): mark the test tf or give it the "
                              "tf_det fixture")
        return None


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


