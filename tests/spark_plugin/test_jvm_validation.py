"""The driver plugin's validation agrees with Python's, and a plugin with no features is inert."""

import pytest
from pyspark.errors.exceptions.captured import CapturedException

import spark_plugin
from spark_plugin.config import Key
from spark_plugin.errors import ConfigError
from spark_plugin.telemetry_reader import TelemetryUnavailable
from tests.helpers import python_refusal

pytestmark = pytest.mark.spark

SPARK_SESSION = dict(master="local[1]", features=[])


@pytest.fixture(scope="module")
def jvm(spark):
    return spark.sparkContext._jvm


def java_validation_error(jvm, conf: dict) -> str | None:
    try:
        jvm.dev.sparkrm.conf.SparkrmConf.validate(conf)
    except CapturedException as e:  # pyspark's wrapper of the Java exception
        return str(e).split("\n\nJVM stacktrace:")[0]
    return None




@pytest.mark.parametrize("conf", [
    {"spark.sparkrm.telemetry.enabled": "yes"},
    {"spark.sparkrm.telemetry.bufferRecords": "10"},
    {"spark.sparkrm.telemetry.bufferRecords": "1e6"},
    {"spark.sparkrm.telemetry.dir": " "},
    {"spark.sparkrm.telemetry.enabeld": "true"},
    {"spark.riffle.whatever": "1"},
    {"spark.sparkrm.telemetry.enabled": "maybe", "spark.sparkrm.telemetry.bufferRecords": "-1",
     "spark.sparkrm.telemtry.dir": "/tmp"},
    {"spark.sparkrm.telemetry.enabled": " TRUE ", "spark.sparkrm.telemetry.bufferRecords": "+5000"},
    {"spark.executor.memory": "not ours"},
    {"spark.rifle.merge.fanIn": "3", "spark.wranglr.mode": "hint", "spark.sql.shuffle.partitions": "4"},
    {"spark.riffle.enabled": "true"},
    {"spark.riffle.enabled": "TRUE", "spark.shuffle.manager": "dev.sparkrm.riffle.RiffleShuffleManager",
     "spark.shuffle.push.enabled": " true"},
    {"spark.wrangler.enabled": "true", "spark.sparkrm.telemetry.enabled": "false"},
    {"spark.wrangler.enabled": "true"},
])
def test_jvm_and_python_report_the_same_problems(jvm, conf):
    assert java_validation_error(jvm, conf) == python_refusal(conf)


@pytest.mark.parametrize("kind,spark_parser", [("size", "byteStringAsBytes"), ("duration", "timeStringAsMs")])
@pytest.mark.parametrize("text", ["0", "512", "64k", "2m", "1GB", "7tb", "1p", "1.5m", "-3", "10 m", "12x",
                                  "", "250ms", "5s", "2min", "1h", "3d", "1500us", "-2s", "1.5s"])
def test_size_and_duration_syntax_matches_sparks_own_parsers(jvm, kind, spark_parser, text):
    key = Key("spark.sparkrm.test.k", kind, None, "k")
    try:
        ours = key.parse(text)
    except ConfigError:
        ours = None
    try:
        theirs = getattr(jvm.org.apache.spark.network.util.JavaUtils, spark_parser)(text)
    except CapturedException:
        theirs = None
    assert ours == theirs


def test_a_plugin_with_no_features_records_nothing(spark):
    assert spark.range(1000).selectExpr("sum(id)").first()[0] == 499500
    with pytest.raises(TelemetryUnavailable, match="no active sparkrm telemetry"):
        spark_plugin.telemetry(spark)


def test_the_loaded_plugin_reports_its_build(jvm):
    info = jvm.dev.sparkrm.compat.SparkCompat.buildInfo()
    assert info.getProperty("spark.version") == jvm.dev.sparkrm.compat.SparkCompat.runtimeSparkVersion()
    assert info.getProperty("source.hash") == spark_plugin.jar.source_hash()


SUBMIT = ["org.apache.spark.deploy.SparkSubmit$", "org.apache.spark.deploy.SparkSubmit"]


@pytest.mark.parametrize("main_thread,owns", [
    (["java.lang.ProcessImpl", "org.apache.spark.deploy.PythonRunner$", *SUBMIT], True),  # spark-submit app.py
    (["org.apache.spark.SparkContext", "com.example.App", "java.lang.reflect.Method", *SUBMIT], True),  # app.jar
    (["org.apache.spark.api.python.PythonGatewayServer$", *SUBMIT], False),  # python app.py, notebooks
    (["org.apache.spark.repl.Main$", "org.apache.spark.repl.Main", *SUBMIT], False),  # spark-shell
    (["org.apache.spark.api.r.RBackend", *SUBMIT], False),  # SparkR
    (["org.apache.spark.deploy.yarn.ApplicationMaster"], False),  # YARN cluster mode: the master reports it
    (["org.apache.spark.deploy.worker.DriverWrapper$"], False),  # standalone cluster mode
    ([], False),
])
def test_a_refused_configuration_exits_only_a_jvm_that_spark_submit_started_for_the_application(jvm, main_thread,
                                                                                               owns):
    assert jvm.dev.sparkrm.conf.StartRefusal.applicationOwnsJvm(main_thread) is owns


def test_a_refused_configuration_never_exits_pysparks_own_gateway(jvm):
    """This test session's JVM serves Python (and a notebook's would): a refusal throws there, so it survives."""
    refusal = jvm.dev.sparkrm.conf.StartRefusal
    main_thread = list(refusal.mainThreadClasses())
    assert "org.apache.spark.api.python.PythonGatewayServer" in main_thread
    assert not refusal.applicationOwnsJvm(main_thread)
