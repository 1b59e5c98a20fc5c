"""The key table and its validation, in pure Python (no Spark)."""

import json

import pytest
from hypothesis import given, strategies as st

from spark_plugin.config import NAMESPACES, Key, KeyTable
from spark_plugin.errors import ConfigError
from spark_plugin.keys import KEYS

TABLE = KeyTable([
    Key("spark.riffle.test.flag", "bool", "false", "a flag"),
    Key("spark.riffle.test.fanIn", "int", "10", "fan-in", low=2, high=1000),
    Key("spark.riffle.test.fraction", "double", "0.95", "fraction", low=0, high=1, low_open=True),
    Key("spark.riffle.test.blockBytes", "size", "2m", "block", low=1, example="1m"),
    Key("spark.riffle.test.timeout", "duration", "5s", "timeout", low=0),
    Key("spark.riffle.test.policy", "enum", "fanin", "policy", options=("fanin", "blocksize")),
    Key("spark.riffle.test.dir", "string", None, "dir", example="/tmp/x"),
])


@pytest.mark.parametrize("kind,raw,value", [
    ("bool", "TRUE", True), ("bool", " false ", False),
    ("int", "42", 42), ("int", "-7", -7),
    ("double", "0.5", 0.5), ("double", "1e-3", 0.001), ("double", ".25", 0.25),
    ("size", "512", 512), ("size", "64k", 65536), ("size", "2m", 2 << 20), ("size", "1GB", 1 << 30),
    ("duration", "250", 250), ("duration", "250ms", 250), ("duration", "5s", 5000),
    ("duration", "2min", 120000), ("duration", "1h", 3600000), ("duration", "1500us", 1),
    ("enum", "BlockSize", "blocksize"), ("string", "/a b", "/a b"),
])
def test_parse_accepts_spark_syntax(kind, raw, value):
    options = ("fanin", "blocksize") if kind == "enum" else ()
    key = Key("spark.riffle.test.k", kind, None, "k", options=options)
    assert key.parse(raw) == value


@pytest.mark.parametrize("name,raw,message", [
    ("spark.riffle.test.flag", "yes",
     "spark.riffle.test.flag must be true or false. Got 'yes'. Set e.g. false or remove it for the default (false)."),
    ("spark.riffle.test.fanIn", "1",
     "spark.riffle.test.fanIn must be an integer in [2, 1000]. Got '1'. Set e.g. 10 or remove it for the default (10)."),
    ("spark.riffle.test.fanIn", "ten",
     "spark.riffle.test.fanIn must be an integer in [2, 1000]. Got 'ten'."),
    ("spark.riffle.test.fraction", "0",
     "spark.riffle.test.fraction must be a number in (0, 1]. Got '0'."),
    ("spark.riffle.test.fraction", "nan", "must be a number in (0, 1]. Got 'nan'."),
    ("spark.riffle.test.blockBytes", "-3",
     "spark.riffle.test.blockBytes must be a size >= 1. Got '-3'. Set e.g. 1m or remove it for the default (2m)."),
    ("spark.riffle.test.blockBytes", "1.5m", "must be a size >= 1. Got '1.5m'."),
    ("spark.riffle.test.timeout", "-1s", "spark.riffle.test.timeout must be a duration >= 0ms. Got '-1s'."),
    ("spark.riffle.test.timeout", "5 parsecs", "must be a duration >= 0ms. Got '5 parsecs'."),
    ("spark.riffle.test.policy", "lifo",
     "spark.riffle.test.policy must be one of 'fanin', 'blocksize'. Got 'lifo'."),
    ("spark.riffle.test.dir", "  ", "spark.riffle.test.dir must be a non-empty string. Got '  '. Set e.g. /tmp/x."),
])
def test_bad_values_name_key_value_range_and_fix(name, raw, message):
    with pytest.raises(ConfigError) as info:
        TABLE.validate({name: raw})
    assert message in str(info.value)


def test_unknown_key_in_our_namespace_suggests_the_closest():
    with pytest.raises(ConfigError, match=r"spark.riffle.test.fanin is not a sparkrm configuration key\. "
                                          r"Did you mean spark.riffle.test.fanIn\?"):
        TABLE.validate({"spark.riffle.test.fanin": "3"})


def test_keys_outside_our_namespaces_are_ignored():
    values = TABLE.validate({"spark.executor.memory": "banana", "spark.plugins": "x"})
    assert values["spark.riffle.test.fanIn"] == 10


def test_all_problems_are_reported_at_once():
    with pytest.raises(ConfigError) as info:
        TABLE.validate({"spark.riffle.test.flag": "maybe", "spark.riffle.test.fanIn": "0",
                        "spark.riffle.nope": "1"})
    assert len(str(info.value).splitlines()) == 3


def test_defaults_fill_in_and_unset_keys_are_none():
    values = TABLE.validate({})
    assert values["spark.riffle.test.blockBytes"] == 2 << 20
    assert values["spark.riffle.test.timeout"] == 5000
    assert values["spark.riffle.test.dir"] is None


def test_a_table_entry_with_a_bad_default_is_rejected():
    with pytest.raises(ConfigError):
        Key("spark.riffle.test.bad", "int", "x", "bad")
    with pytest.raises(ValueError, match="outside the namespaces"):
        Key("spark.other.key", "int", "1", "elsewhere")


def test_every_declared_key_is_documented_and_in_a_namespace():
    for key in KEYS:
        assert key.name.startswith(NAMESPACES)
        assert key.doc.strip().endswith((".", ")"))
        assert key.default is not None or key.example, f"{key.name} needs a default or an example"


@given(st.integers(min_value=0, max_value=1 << 40), st.sampled_from(["", "b", "k", "m", "g"]))
def test_size_parsing_matches_its_unit(n, unit):
    key = Key("spark.riffle.test.s", "size", None, "s")
    factor = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[unit]
    if n * factor < 1 << 63:
        assert key.parse(f"{n}{unit}") == n * factor
    else:  # Spark's byteStringAsBytes refuses sizes beyond a long, so the driver plugin would
        with pytest.raises(ConfigError, match="must be a size"):
            key.parse(f"{n}{unit}")


def test_every_key_the_java_code_names_is_declared():
    """Java reads keys by name: a renamed or misspelt one would silently read nothing."""
    import re
    from pathlib import Path

    from spark_plugin.config import NAMESPACES
    from spark_plugin.keys import KEYS

    project = Path(__file__).resolve().parents[2]
    named = {}
    for source in [*project.glob("spark_plugin/jvm/src/**/*.java"), *project.glob("shuffle_merge/jvm/src/**/*.java")]:
        for literal in re.findall(r'"(spark\.[A-Za-z0-9_.]+)"', source.read_text()):
            if literal.startswith(NAMESPACES) or literal + "." in NAMESPACES:
                named.setdefault(literal, source.name)
    assert named, "no key names found: the scan is broken"
    undeclared = {k: f for k, f in named.items() if k not in KEYS.keys and k not in NAMESPACES}
    assert undeclared == {}
    code = lambda p: [line for line in p.read_text().splitlines() if not line.strip().startswith(("*", "/*", "//"))]
    hard_coded_prefix = [p.name for p in project.glob("**/jvm/src/**/*.java") if any('"sparkrm.job.' in line
                                                                                     for line in code(p))]
    assert hard_coded_prefix == []  # the per-job prefix comes from the key table


def test_per_job_settings_come_from_the_key_table():
    from shuffle_merge.job import JOB_SETTINGS, job_property
    from spark_plugin.keys import KEYS

    assert JOB_SETTINGS["fan_in"] == "spark.riffle.merge.fanIn"
    assert set(JOB_SETTINGS.values()) == {k.name for k in KEYS if k.job_setting}
    assert job_property("spark.riffle.merge.fanIn") == "sparkrm.job.riffle.merge.fanIn"
    exported = json.loads(KEYS.to_json())
    assert exported["jobPrefix"] == "sparkrm.job."
    assert {k["name"] for k in exported["keys"] if k["perJob"]} == set(JOB_SETTINGS.values())
