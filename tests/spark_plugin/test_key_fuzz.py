"""Every key of the table, fed malformed, out-of-range and wrong-type values, through every Python path.

Each path by which a key reaches the plugin before a JVM starts (the validator, ``plugin_conf``,
``configure``, ``session``, ``sparkrm submit-args`` and ``sparkrm submit``) must refuse such a value cleanly: a
:class:`ConfigError` (exit status 2 from the command line) whose message is one line that starts
with the key. No JVM here: the jar's path is the only thing replaced, so no build can start.
The same values go through the driver plugin's validator in ``test_key_parity.py``.
"""

from __future__ import annotations

import contextlib
import io
import re
import tempfile
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings, strategies as st

from spark_plugin import __main__ as cli
from spark_plugin.activation import plugin_conf
from spark_plugin.errors import ConfigError
from spark_plugin.keys import KEYS
from tests.helpers import python_refusal

#: Fixed examples: the suite sees the same values every run (house rule 13).
FUZZ = settings(max_examples=400, derandomize=True, deadline=None)

#: A scratch folder for the ``file`` keys: a folder, a file that is no model, and nothing else.
SCRATCH = Path(tempfile.mkdtemp(prefix="sparkrm-key-fuzz-"))
(SCRATCH / "folder").mkdir()
(SCRATCH / "not-a-model.json").write_text('{"format": "something-else"}')
(SCRATCH / "broken.json").write_text('{"format": ')

#: Text that no key of any kind accepts as a number, bool or enum option (no digits, and no letter
#: outside x, y, z, q, w, v: every option has one), but that is a fine string.
JUNK = st.text(alphabet="xyzqwv!#%&*()[]{},;:_~ ", min_size=1, max_size=12).filter(lambda s: s.strip())


def _format_double(x: float) -> str:
    return repr(float(x))


def out_of_range(key) -> list:
    """Strategies for values of the right syntax beyond the key's bounds (in its unit)."""
    unit = {"duration": "ms"}.get(key.kind, "")
    strategies = []
    if key.kind in ("int", "size", "duration"):
        if key.low is not None and (key.kind != "size" or key.low > 0):  # a size has no minus sign
            lowest = 0 if key.kind == "size" else -(10 ** 30)
            strategies.append(st.integers(min_value=lowest, max_value=int(key.low) - (0 if key.low_open else 1))
                              .map(lambda n: f"{n}{unit}"))
        if key.high is not None:
            strategies.append(st.integers(min_value=int(key.high) + (0 if key.high_open else 1),
                                          max_value=10 ** 30).map(lambda n: f"{n}{unit}"))
        else:  # beyond a Java long: the JVM cannot hold it
            strategies.append(st.integers(min_value=1 << 63, max_value=10 ** 30).map(str))
    if key.kind == "double":
        if key.low is not None:
            strategies.append(st.floats(max_value=key.low, min_value=-1e300)
                              .filter(lambda x: x < key.low or (key.low_open and x == key.low)).map(_format_double))
        if key.high is not None:
            strategies.append(st.floats(min_value=key.high, max_value=1e300)
                              .filter(lambda x: x > key.high or (key.high_open and x == key.high)).map(_format_double))
    return strategies


#: Malformed values per kind, beside the generated ones.
MALFORMED = {
    "bool": ["yes", "no", "1", "0", "on", "t", "tru", "truee", "false!", "", " ", "null"],
    "int": ["1.5", "1e3", "0x10", "\u0661\u0662", "1_000", "--1", "+-1", "", " ", "12k", "1 000", "ten", "null",
            "99999999999999999999"],
    "double": ["nan", "NaN", "inf", "-inf", "Infinity", "1,5", "1e", "e5", ".", "0x1p3", "\u0661.\u0665", "1.5.2",
               "", " ", "half", "1e5e5"],
    "size": ["12x", "-3", "1.5m", "m", "1 m", "\u0661\u0660k", "+5", "5kib", "", " ", "99999999999999999999",
             "9999999999p", "8589934592g", "1e3"],
    "duration": ["5 parsecs", "1.5s", "s", "5sec", "\u0661s", "+5s", "99999999999999999999ms", "", " ", "5 s",
                 "1e3ms", "ms"],
    "enum": ["", " ", "null", "default", "fan-in", "none"],
    "string": ["", " ", "\t", " \n "],
    "file": ["", " ", str(SCRATCH / "missing.json"), str(SCRATCH / "missing.joblib"), str(SCRATCH / "folder"),
             str(SCRATCH / "not-a-model.json"), str(SCRATCH / "broken.json")],
}


def malformed(key) -> st.SearchStrategy:
    """Values ``key`` must refuse: fixed malformed ones, generated junk and values out of range."""
    options = [st.sampled_from(MALFORMED[key.kind]), *out_of_range(key)]
    if key.kind == "file":
        options.append(JUNK.map(lambda name: str(SCRATCH / "absent" / name)))
    elif key.kind != "string":
        options.append(JUNK)
    return st.one_of(options)


@st.composite
def bad_entries(draw):
    key = draw(st.sampled_from(list(KEYS)))
    return key, draw(malformed(key))


def refusal(conf: dict) -> str:
    """The validator's message for ``conf``, which must be refused."""
    with pytest.raises(ConfigError) as info:
        KEYS.validate(conf)
    return str(info.value)


def run_cli(*args) -> tuple[int, str, str]:
    """``sparkrm ARGS`` in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(list(args))
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(autouse=True, scope="module")
def no_jar_build():
    """The jar's path is all these paths need from it; a stale jar is not rebuilt here."""
    with mock.patch("spark_plugin.activation.jar_path", return_value=Path("/opt/sparkrm.jar")):
        yield


@FUZZ
@given(bad_entries())
def test_the_validator_refuses_every_bad_value_in_one_line_naming_the_key(entry):
    key, value = entry
    message = refusal({key.name: value})
    assert "\n" not in message and len(message.splitlines()) == 1, message
    assert message.startswith(key.name), message


@FUZZ
@given(bad_entries())
def test_configure_refuses_every_bad_value_with_the_validators_message(entry):
    key, value = entry
    with pytest.raises(ConfigError) as info:
        plugin_conf([], {key.name: value})
    assert str(info.value) == refusal({key.name: value})


@FUZZ
@given(bad_entries())
def test_configure_and_session_refuse_a_bad_value_already_on_the_builder_or_in_conf(entry):
    from pyspark.sql import SparkSession

    import spark_plugin

    key, value = entry
    with pytest.raises(ConfigError) as info:  # never replaced by a feature's value, which would hide it
        spark_plugin.configure(SparkSession.builder.config(key.name, value), features=[])
    assert str(info.value) == refusal({key.name: value})
    with pytest.raises(ConfigError) as info:  # refused before getOrCreate starts a JVM
        spark_plugin.session("local[1]", features=[], conf={key.name: value})
    assert str(info.value) == refusal({key.name: value})


@FUZZ
@given(bad_entries())
def test_submit_args_exits_2_with_one_line_and_a_flag_spark_submit_rejects(entry):
    key, value = entry
    status, out, err = run_cli("submit-args", "--features", "", "--conf", f"{key.name}={value}")
    assert status == 2
    assert err == f"error: {refusal({key.name: value.strip()})}\n"  # submit-args trims what it prints and checks
    assert out == f"{cli.REJECTED_BY_SPARK_SUBMIT}\n"


@FUZZ
@given(bad_entries())
def test_submit_exits_2_with_one_line_before_any_jvm_starts(entry):
    key, value = entry
    with mock.patch("subprocess.run", side_effect=AssertionError("spark-submit must not run")):
        status, out, err = run_cli("submit", "--features", "", "--master", "local[1]", "--conf",
                                   f"{key.name}={value}", "app.py")
    assert status == 2 and out == ""
    assert err == f"error: {refusal({key.name: value})}\n"  # passed on to spark-submit untrimmed, checked so


def test_every_kind_of_the_table_has_malformed_values():
    assert {key.kind for key in KEYS} <= set(MALFORMED)


@pytest.mark.parametrize("name,problem", [
    ("", " must be a readable file on the driver. Got ''."),
    ("missing.joblib", "={path}: no such file."),
    ("folder", "={path} is a directory, not a file."),
    ("not-a-model.json",
     '={path} is not a valid Wrangler model: format must be "sparkrm-wrangler-model"; got a string.'),
    ("broken.json", "={path} cannot be read as JSON (Expecting value: line 1 column 12 (char 11))."),
])
def test_a_model_path_names_the_file_the_problem_and_the_fix(name, problem):
    value = str(SCRATCH / name) if name else ""
    fix = KEYS["spark.wrangler.model.path"].fix()
    expected = f"spark.wrangler.model.path{problem.format(path=value)} {fix}"
    assert refusal({"spark.wrangler.model.path": value}) == expected
    assert fix.startswith("Write it with `python -m spark_plugin.wrangler train")


def test_a_joblib_model_is_only_checked_to_exist_and_a_cluster_mode_driver_is_not_checked_here():
    model = SCRATCH / "model.joblib"
    model.write_bytes(b"\x80\x04joblib")
    assert KEYS.validate({"spark.wrangler.model.path": str(model)})["spark.wrangler.model.path"] == str(model)
    missing = {"spark.wrangler.model.path": str(SCRATCH / "missing.json")}
    assert KEYS.validate({**missing, "spark.submit.deployMode": "cluster"})
    with mock.patch("subprocess.run", side_effect=AssertionError("dry run")):
        status, out, err = run_cli("submit", "--dry-run", "--deploy-mode", "cluster", "--conf",
                                   f"spark.wrangler.model.path={missing['spark.wrangler.model.path']}", "app.py")
    assert status == 0 and err == "" and "--deploy-mode cluster" in out


def test_values_are_trimmed_and_read_as_the_jvm_reads_them():
    """Java's String.trim, ASCII digits and a long's range: what SparkrmConf.java and Spark's parsers do."""
    key = KEYS["spark.riffle.merger.threads"]
    assert key.parse("\x00 4\x1f") == 4  # trim drops every character up to a space
    for value in ("\u20034", "4\u00a0", "\u0664", "\ufeff4"):  # not trimmed by Java, not an ASCII digit
        with pytest.raises(ConfigError, match="must be an integer in"):
            key.parse(value)
    size = KEYS["spark.riffle.merge.targetBlockBytes"]
    assert size.parse("8589934591g") == 8589934591 << 30
    with pytest.raises(ConfigError, match="must be a size >= 1. Got '8589934592g'"):
        size.parse("8589934592g")  # 2^63 bytes: ByteUnit refuses the overflow
    timeout = KEYS["spark.riffle.read.planTimeout"]
    assert timeout.parse("1999us") == 1 and timeout.parse("9223372036854775807d") == (1 << 63) - 1  # TimeUnit saturates
    with pytest.raises(ConfigError, match=r"Got '2\\u000as'"):  # one line, whatever the value holds
        timeout.parse("2\ns")


# The same values through the driver plugin's validator (SparkrmConf.java), in one plain JVM (no Spark
# context): both sides must accept the same values and refuse the others with the same line.

def _normalised(message: str | None) -> str | None:
    """``message`` without the JSON parser's own words, which differ between Python and Jackson."""
    if message is None:
        return None
    return re.sub(r"cannot be read as JSON \(.*?\)\. ", "cannot be read as JSON. ", message)


@pytest.fixture(scope="module")
def java_refusal():
    """``conf -> message or None`` from ``SparkrmConf.validateOnDriver`` in a plain JVM with the jar."""
    from py4j.protocol import Py4JJavaError

    from spark_plugin.jar import jar_path, pyspark_jars_dir
    from tests.plain_jvm import plain_jvm

    with plain_jvm(jar_path(), pyspark_jars_dir() / "*") as jvm:
        conf_class = jvm.dev.sparkrm.conf.SparkrmConf

        def refuse(conf: dict) -> str | None:
            try:
                conf_class.validateOnDriver(conf)
            except Py4JJavaError as e:
                return str(e.java_exception.getMessage())
            return None
        yield refuse


#: Characters where Python and Java could part: what String.trim drops and str.strip keeps (and the
#: reverse), non-ASCII digits and letters that lower-case to ASCII.
ODD = "\x00\x1f \t\n\x0b\x85\xa0\u2003\u2028\u3000\ufeff\u0661\u212a\u0130\u017f"


@st.composite
def near_valid_entries(draw):
    """A key with a valid value (its default, an option, an example) wrapped in odd characters, or any text."""
    key = draw(st.sampled_from(list(KEYS)))
    cores = [c for c in (key.default, key.example, *key.options, "4", "64k", "2min", "1.5", "true") if c]
    text = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=16)
    odd = st.text(alphabet=ODD, max_size=3)
    value = draw(st.one_of(text, st.builds(lambda a, core, b: a + core + b, odd, st.sampled_from(cores), odd)))
    return key, value


@pytest.mark.spark
@settings(FUZZ, max_examples=800)
@given(st.one_of(bad_entries(), near_valid_entries()))
def test_the_driver_plugin_and_python_accept_and_refuse_alike_with_the_same_line(java_refusal, entry):
    key, value = entry
    assert _normalised(java_refusal({key.name: value})) == _normalised(python_refusal({key.name: value}))
