"""Building, locating and staleness of the plugin jar (real javac, no Spark)."""

import shutil
import zipfile

import pytest

from spark_plugin import jar
from spark_plugin.errors import JarError, UnsupportedSparkVersion


def test_installed_jar_is_fresh_and_records_its_build():
    path = jar.jar_path()
    assert path.is_file()
    info = jar.build_info(path)
    assert info["spark.version"] == jar.pyspark_version()
    assert info["source.hash"] == jar.source_hash()
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
    assert {"dev/sparkrm/SparkrmPlugin.class", "dev/sparkrm/keys.json", "META-INF/MANIFEST.MF"} <= names


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """A copy of the Java sources, a packaged-jar location and a cache, all under tmp_path.

    The first source tree is copied to ``tmp_path/jvm``, where tests add or break files.
    """
    copies = []
    for i, root in enumerate(jar.SOURCE_ROOTS):
        copies.append(tmp_path / ("jvm" if i == 0 else f"jvm{i}"))
        shutil.copytree(root, copies[-1])
    monkeypatch.setattr(jar, "SOURCE_ROOTS", tuple(copies))
    monkeypatch.setattr(jar, "PACKAGED_JAR", tmp_path / "pkg" / "jars" / jar.JAR_NAME)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


def test_missing_jar_is_built_and_then_reused(sandbox):
    built = jar.jar_path()
    assert built == jar.PACKAGED_JAR and built.is_file()
    stamp = built.stat().st_mtime_ns
    assert jar.jar_path() == built and built.stat().st_mtime_ns == stamp


@pytest.fixture(scope="module")
def installed():
    return jar.jar_path()


def installed_copy(installed) -> None:
    """The installed jar as the sandbox's packaged jar: fresh there, since the sources are copies."""
    jar.PACKAGED_JAR.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(installed, jar.PACKAGED_JAR)
    assert jar.is_fresh(jar.PACKAGED_JAR)


def test_changed_sources_make_the_jar_stale(installed, sandbox):
    installed_copy(installed)
    built = jar.PACKAGED_JAR
    old_hash = jar.build_info(built)["source.hash"]
    resources = sandbox / "jvm" / "resources"
    resources.mkdir(exist_ok=True)
    (resources / "note.txt").write_text("a resource added later\n")
    assert not jar.is_fresh(built)
    rebuilt = jar.jar_path()
    assert jar.build_info(rebuilt)["source.hash"] != old_hash
    with zipfile.ZipFile(rebuilt) as z:
        assert z.read("note.txt") == b"a resource added later\n"


def test_a_jar_built_for_another_pyspark_or_corrupt_is_stale(installed, sandbox):
    """Either is rebuilt by jar_path(), as a jar with changed sources is (above)."""
    installed_copy(installed)
    with zipfile.ZipFile(installed) as src, zipfile.ZipFile(jar.PACKAGED_JAR, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename.endswith("build.properties"):
                data = data.replace(f"spark.version={jar.pyspark_version()}".encode(), b"spark.version=4.1.0-other")
            dst.writestr(item, data)
    assert jar.build_info(jar.PACKAGED_JAR)["spark.version"] == "4.1.0-other"
    assert not jar.is_fresh(jar.PACKAGED_JAR)
    jar.PACKAGED_JAR.write_bytes(b"not a zip file")
    assert jar.build_info(jar.PACKAGED_JAR) == {} and not jar.is_fresh(jar.PACKAGED_JAR)


def test_unwritable_package_folder_builds_into_the_cache(sandbox, monkeypatch):
    monkeypatch.setattr(jar, "_writable", lambda folder: False)
    built = jar.jar_path()
    assert built.is_relative_to(sandbox / "cache" / "sparkrm")
    assert jar.jar_path() == built


def test_no_jdk_names_the_package_to_install(sandbox, monkeypatch, tmp_path):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(JarError, match=r"no `javac` is on PATH.*openjdk-17-jdk-headless"):
        jar.jar_path()


def test_java_home_without_javac_is_reported(sandbox, monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jre"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(JarError, match=r"JAVA_HOME=.*jre has no bin/javac"):
        jar.find_javac()


def test_compile_errors_are_reported_with_javac_output(sandbox):
    (sandbox / "jvm" / "src" / "Broken.java").write_text("class Broken { int x = ; }\n")
    with pytest.raises(JarError, match=r"(?s)javac failed.*Broken.java"):
        jar.jar_path()


@pytest.mark.parametrize("version", ["3.5.3", "4.3.0", "5.0.0", "banana"])
def test_unsupported_spark_versions_are_refused(version):
    with pytest.raises(UnsupportedSparkVersion, match="sparkrm supports Spark 4.0 up to|Cannot read"):
        jar.check_spark_version(version)


@pytest.mark.parametrize("version", ["4.0.1", "4.1.4", "4.2.0"])
def test_supported_spark_versions_pass(version):
    jar.check_spark_version(version)
