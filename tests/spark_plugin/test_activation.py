"""Turning the plugin on: builder helper, spark-submit flags and feature selection (no JVM)."""

import pytest
from pyspark.sql import SparkSession

import spark_plugin
from spark_plugin.activation import configure, plugin_conf, submit_args
from spark_plugin.errors import ConfigError


def test_default_features_enable_telemetry():
    conf = plugin_conf()
    assert conf["spark.sparkrm.telemetry.enabled"] == "true"
    assert conf["spark.plugins"] == spark_plugin.PLUGIN_CLASS
    assert conf["spark.jars"] == str(spark_plugin.jar_path())


def test_no_features_switches_everything_off():
    for off in ([], ""):
        conf = plugin_conf(features=off)
        assert conf["spark.sparkrm.telemetry.enabled"] == conf["spark.riffle.enabled"] == "false"
        assert "spark.shuffle.manager" not in conf


def test_the_riffle_feature_sets_the_shuffle_manager_too():
    conf = plugin_conf(["telemetry", "riffle"])
    assert conf["spark.riffle.enabled"] == "true"
    assert conf["spark.shuffle.manager"] == "dev.sparkrm.riffle.RiffleShuffleManager"


def test_explicit_conf_wins_over_feature_defaults():
    conf = plugin_conf(["telemetry"], {"spark.sparkrm.telemetry.bufferRecords": 5000})
    assert conf["spark.sparkrm.telemetry.bufferRecords"] == "5000"


def test_a_value_the_user_set_is_never_replaced():
    builder = SparkSession.Builder().config("spark.shuffle.manager", "org.apache.spark.shuffle.celeborn.SparkShuffleManager")
    with pytest.raises(ConfigError, match=r"features=\['riffle'\] set spark.shuffle.manager=dev.sparkrm.riffle."
                                          r"RiffleShuffleManager, but your configuration sets it to 'org.apache.spark."
                                          r"shuffle.celeborn.SparkShuffleManager'"):
        configure(builder, features=["riffle"])
    assert builder._options["spark.shuffle.manager"].endswith("celeborn.SparkShuffleManager")  # untouched
    with pytest.raises(ConfigError, match=r"sets it to 'true'; sparkrm never replaces a value you set. Add 'riffle' "
                                          r"to the features, or remove spark.riffle.enabled"):
        plugin_conf(["telemetry"], {"spark.riffle.enabled": "true"})
    assert plugin_conf(["telemetry", "riffle"], {"spark.riffle.enabled": "TRUE"})["spark.riffle.enabled"] == "TRUE"


@pytest.mark.parametrize("conf, message", [
    ({"spark.wrangler.enabled": "true", "spark.sparkrm.telemetry.enabled": "false"},
     "spark.wrangler.enabled=true needs spark.sparkrm.telemetry.enabled=true, but spark.sparkrm.telemetry.enabled is "
     "'false'. Wrangler learns and predicts from telemetry"),
    ({"spark.riffle.enabled": "true"},
     "spark.riffle.enabled=true needs spark.shuffle.manager=dev.sparkrm.riffle.RiffleShuffleManager, but "
     "spark.shuffle.manager is 'sort'."),
    ({"spark.riffle.enabled": "true", "spark.shuffle.manager": "dev.sparkrm.riffle.RiffleShuffleManager",
      "spark.shuffle.push.enabled": "true"},
     "spark.riffle.enabled=true cannot run with spark.shuffle.push.enabled=true. Push-based shuffle already merges"),
    ({"spark.rifle.merge.fanIn": "3"},
     "spark.rifle.merge.fanIn is not a sparkrm configuration key (spark.rifle is not a sparkrm namespace). Did you "
     "mean spark.riffle.merge.fanIn?"),
])
def test_rules_between_keys_and_namespace_typos(conf, message):
    from spark_plugin.keys import KEYS

    with pytest.raises(ConfigError) as e:
        KEYS.validate(conf)
    assert message in str(e.value)


def test_spark_namespaces_near_ours_are_left_alone():
    from spark_plugin.keys import KEYS

    KEYS.validate({"spark.sql.shuffle.partitions": "4", "spark.rpc.askTimeout": "10s", "spark.shuffle.compress": "true"})


def test_unknown_feature_lists_the_known_ones():
    with pytest.raises(ConfigError, match=r"Unknown feature 'telemetri'\. Known features: riffle, telemetry"):
        plugin_conf(["telemetri"])


def test_bad_key_fails_before_any_jvm_starts():
    with pytest.raises(ConfigError, match=r"spark.sparkrm.telemetry.enabled must be true or false\. Got 'on'"):
        plugin_conf(conf={"spark.sparkrm.telemetry.enabled": "on"})


def test_none_values_are_refused():
    with pytest.raises(ConfigError, match="cannot be None"):
        plugin_conf(conf={"spark.sparkrm.telemetry.dir": None})


def test_configure_appends_to_existing_jars_and_plugins():
    builder = SparkSession.Builder()
    builder.config("spark.jars", "/opt/other.jar").config("spark.plugins", "com.example.Other")
    assert configure(builder) is builder
    assert builder._options["spark.jars"] == f"/opt/other.jar,{spark_plugin.jar_path()}"
    assert builder._options["spark.plugins"] == f"com.example.Other,{spark_plugin.PLUGIN_CLASS}"
    configure(builder)  # idempotent: nothing is added twice
    assert builder._options["spark.plugins"].count(spark_plugin.PLUGIN_CLASS) == 1


def test_configure_rejects_what_is_not_a_builder():
    with pytest.raises(TypeError, match=r"takes a pyspark.sql.SparkSession.Builder, got dict"):
        configure({"spark.master": "local"})


def test_submit_args_put_the_jar_first_and_every_key_after_conf():
    args = submit_args(["telemetry"], {"spark.sparkrm.telemetry.dir": "/tmp/t"})
    assert args[:2] == ["--jars", str(spark_plugin.jar_path())]
    pairs = dict(a.split("=", 1) for a in args[3::2])
    assert set(args[2::2]) == {"--conf"}
    assert pairs == {"spark.sparkrm.telemetry.enabled": "true", "spark.sparkrm.telemetry.dir": "/tmp/t",
                     "spark.riffle.enabled": "false", "spark.wrangler.enabled": "false",
                     "spark.plugins": spark_plugin.PLUGIN_CLASS}
