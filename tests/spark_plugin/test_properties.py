"""spark-defaults.conf is read as Spark reads it: java.util.Properties rules, UTF-8, trimmed values."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_plugin.errors import ConfigError
from spark_plugin.properties import load_properties, parse_properties
from tests.plain_jvm import plain_jvm


@pytest.fixture(scope="module")
def java_properties():
    """``text -> dict`` by java.util.Properties.load(Reader) itself, or "refused"."""
    with plain_jvm() as jvm:
        def load(text):
            props = jvm.java.util.Properties()
            try:
                props.load(jvm.java.io.StringReader(text))
            except Exception:  # py4j's error (or pyspark's wrapper of it, once pyspark has run): refused
                return "refused"
            names = props.stringPropertyNames().toArray()  # indexed: py4j iterators end in an exception
            return {str(names[i]): str(props.getProperty(names[i])) for i in range(len(names))}
        yield load


def ours(text):
    try:
        return parse_properties(text)
    except ConfigError:
        return "refused"


CASES = [
    "a=1\nb : 2\nc 3\n",
    "spark.executor.extraJavaOptions=-Da=1 \\\n    -Db=2\n",
    "  # comment \\\nnot.continued=yes\n! also a comment\n",
    "key\\ with\\ spaces = v\\tx\\u0041\n",
    "k==v\nk2 = = v\nk3=\\\n",
    "k=\\uZZZZ\n",
    "a\r\nb=2\rc=3",
    "trailing=x\\\\\nnext=y\\\\\\\n  joined\n",
]


@pytest.mark.parametrize("text", CASES)
def test_the_rules_of_java_properties(java_properties, text):
    assert ours(text) == java_properties(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab=: \t\\#!\n\ru0Aé", max_size=40))
def test_any_text_parses_as_java_parses_it(java_properties, text):
    assert ours(text) == java_properties(text)


def test_values_are_trimmed_and_bad_files_name_themselves(tmp_path):
    conf = tmp_path / "spark-defaults.conf"
    conf.write_text("spark.riffle.merge.fanIn   20   \nspark.driver.extraJavaOptions -Dx=1 \\\n  -Dy=2\n")
    assert load_properties(conf) == {"spark.riffle.merge.fanIn": "20", "spark.driver.extraJavaOptions": "-Dx=1 -Dy=2"}
    binary = tmp_path / "image.conf"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    with pytest.raises(ConfigError, match=r"image.conf is not a text file \(it has a NUL byte at offset 8\)"):
        load_properties(binary)
    latin = tmp_path / "latin1.conf"
    latin.write_bytes("spark.app.name=caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"latin1.conf is not UTF-8 text \(byte 18 is 0xe9\)"):
        load_properties(latin)
    with pytest.raises(ConfigError, match="does not exist or is not a file"):
        load_properties(tmp_path / "missing.conf")
