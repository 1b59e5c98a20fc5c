"""Locating, checking and building the sparkrm jar.

The jar is compiled with ``javac`` against the jars of the installed pyspark,
at ``pip install`` time (see ``setup.py``) and again on demand: when it is
missing, when its Java sources changed, or when pyspark was upgraded to
another version. A jar records what it was built from in
``dev/sparkrm/build.properties`` (Spark version and a hash of the sources and
key table), so staleness is a comparison, not a guess.

This module uses the standard library only: ``setup.py`` imports it before
pyspark or pyarrow are importable.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from ._version import __version__ as PACKAGE_VERSION
from .errors import ConfigError, JarError, UnsupportedSparkVersion
from .keys import KEYS

log = logging.getLogger(__name__)

JAR_NAME = "sparkrm.jar"
#: Spark lines the Java layer compiles and runs against: [low, high).
SUPPORTED_SPARK = ((4, 0), (4, 3))
#: Bump when the jar layout changes, so that older jars count as stale.
_BUILD_FORMAT = "1"
_BUILD_INFO = "dev/sparkrm/build.properties"
_KEYS_RESOURCE = "dev/sparkrm/keys.json"

_PROJECT_DIR = Path(__file__).resolve().parent.parent
#: Java source trees compiled into the one jar: ``src`` holds .java files,
#: ``resources`` files copied as they are.
#: The core first; each system's own tree beside its Python (a system registers with the core through
#: ``resources/META-INF/services/dev.sparkrm.SparkrmSystem``, whose lines the jar joins).
SOURCE_ROOTS = (_PROJECT_DIR / "spark_plugin" / "jvm", _PROJECT_DIR / "spark_plugin" / "advisor" / "jvm",
                _PROJECT_DIR / "spark_plugin" / "slaq" / "jvm", _PROJECT_DIR / "spark_plugin" / "wrangler" / "jvm",
                _PROJECT_DIR / "shuffle_merge" / "jvm")
PACKAGED_JAR = Path(__file__).resolve().parent / "jars" / JAR_NAME

_JDK_HINT = ("Install a JDK 17 or newer (Debian/Ubuntu: `apt-get install openjdk-17-jdk-headless`; "
             "RHEL/Fedora: `dnf install java-17-openjdk-devel`; macOS: `brew install openjdk@17`) "
             "or point JAVA_HOME at one.")


def pyspark_version() -> str:
    """Version of the installed pyspark distribution, without importing it."""
    try:
        return importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError as e:
        raise JarError("pyspark is not installed; the sparkrm jar is compiled against its jars. "
                       "Install it with `pip install 'pyspark>=4.1,<4.2'`.") from e


def pyspark_jars_dir() -> Path:
    """The ``jars`` folder of the installed pyspark."""
    dist = importlib.metadata.distribution("pyspark")
    jars = Path(dist.locate_file("pyspark")) / "jars"
    if not jars.is_dir():
        raise JarError(f"pyspark {pyspark_version()} has no jars folder at {jars}; reinstall pyspark.")
    return jars


def check_spark_version(version: str) -> None:
    """Raise :class:`UnsupportedSparkVersion` unless ``version`` is in :data:`SUPPORTED_SPARK`."""
    try:
        major_minor = tuple(int(p) for p in version.split(".")[:2])
    except ValueError as e:
        raise UnsupportedSparkVersion(f"Cannot read the Spark version {version!r}.") from e
    low, high = SUPPORTED_SPARK
    if not low <= major_minor < high:
        raise UnsupportedSparkVersion(
            f"sparkrm supports Spark {low[0]}.{low[1]} up to (not including) {high[0]}.{high[1]}; "
            f"found pyspark {version}. Install a supported one, e.g. `pip install 'pyspark>=4.1,<4.2'`.")


def source_hash() -> str:
    """Hash of everything a jar is built from: Java sources, resources and the key table."""
    h = hashlib.sha256(f"format {_BUILD_FORMAT}\n".encode())
    for path, rel in _source_files():
        h.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(_keys_json().encode())
    return h.hexdigest()[:16]


def build_info(jar: Path) -> dict:
    """The ``build.properties`` of ``jar`` as a dict (empty when unreadable)."""
    try:
        with zipfile.ZipFile(jar) as z:
            text = z.read(_BUILD_INFO).decode()
    except (OSError, KeyError, zipfile.BadZipFile):
        return {}
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))


def is_fresh(jar: Path, spark_version: str | None = None) -> bool:
    """Whether ``jar`` exists and was built from the current sources for this pyspark."""
    info = build_info(jar)
    return (info.get("source.hash") == source_hash()
            and info.get("spark.version") == (spark_version or pyspark_version()))


def jar_path(*, rebuild: bool = False) -> Path:
    """Return the path of an up-to-date sparkrm jar, building it when needed.

    The jar installed with the package is used when fresh. Otherwise a jar is
    built into the package folder when that is writable, else into the user's
    cache (``$XDG_CACHE_HOME/sparkrm`` or ``~/.cache/sparkrm``).

    Parameters
    ----------
    rebuild : bool, default=False
        Build a new jar even when a fresh one exists.

    Raises
    ------
    UnsupportedSparkVersion
        If the installed pyspark is outside :data:`SUPPORTED_SPARK`.
    JarError
        If a build is needed and no JDK is found, or ``javac`` fails.
    """
    version = pyspark_version()
    check_spark_version(version)
    cached = cache_dir() / f"spark-{version}-{source_hash()}" / JAR_NAME
    if not rebuild:
        for candidate in (PACKAGED_JAR, cached):
            if is_fresh(candidate, version):
                return candidate
    target = PACKAGED_JAR if _writable(PACKAGED_JAR.parent) else cached
    log.info("Building %s against pyspark %s (missing, stale or rebuild requested)", target, version)
    return build_jar(target)


def build_jar(target: Path, spark_jars: Path | None = None, spark_version: str | None = None) -> Path:
    """Compile the Java sources against ``spark_jars`` and write the jar to ``target``.

    The jar is assembled in a temporary folder and moved into place, so a
    concurrent reader never sees half a jar.

    Returns
    -------
    Path
        ``target``.
    """
    spark_jars = spark_jars or pyspark_jars_dir()
    spark_version = spark_version or pyspark_version()
    # Hashed before javac reads the sources: one edited during the build leaves a jar that counts as
    # stale (rebuilt next time), never one that holds old classes under the new hash.
    sources_hash = source_hash()
    javac = find_javac()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sparkrm-build-") as tmp:
        classes = Path(tmp) / "classes"
        sources = [str(p) for p, rel in _source_files() if p.suffix == ".java"]
        arglist = Path(tmp) / "sources.txt"
        arglist.write_text("\n".join(f'"{s}"' for s in sources))
        cmd = [javac, "--release", "17", "-encoding", "UTF-8", "-nowarn", "-Xlint:-options",
               "-cp", str(spark_jars / "*"), "-d", str(classes), f"@{arglist}"]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            raise JarError(f"javac failed building the sparkrm jar against pyspark {spark_version}:\n"
                           f"{result.stderr.strip()}")
        partial = Path(tmp) / JAR_NAME
        _write_jar(partial, classes, spark_version, sources_hash)
        staged = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        shutil.copyfile(partial, staged)
        os.replace(staged, target)
    return target


def find_javac() -> str:
    """Path of ``javac`` from ``JAVA_HOME`` or ``PATH``.

    Raises
    ------
    JarError
        Naming the package to install when no JDK is found.
    """
    return _jdk_tool("javac", "Cannot build the sparkrm jar", "(a JRE alone is not enough)")


def find_java() -> str:
    """Path of ``java`` from ``JAVA_HOME`` or ``PATH``, for the tools that run the jar's classes directly."""
    return _jdk_tool("java", "Cannot run the sparkrm jar's tools", "")


#: The oldest Java that Spark 4 runs on.
MIN_JAVA = 17


def check_java_home() -> None:
    """Refuse a ``JAVA_HOME`` that Spark's launcher cannot start a JVM from: no ``bin/java`` there, or a Java
    older than :data:`MIN_JAVA` by its ``release`` file. Unset, the ``java`` on ``PATH`` is used and not checked.

    Spark's ``spark-class`` runs ``$JAVA_HOME/bin/java`` whenever the variable is set, and pyspark then fails
    with a stack about its gateway; this says what is wrong first.

    Raises
    ------
    ConfigError
        One line naming JAVA_HOME, its value and the fix.
    """
    java_home = os.environ.get("JAVA_HOME")
    if not java_home:
        return
    fix = (f"Point JAVA_HOME at a JDK {MIN_JAVA} (the folder holding bin/java, e.g. "
           f"/usr/lib/jvm/java-{MIN_JAVA}-openjdk-amd64), or unset it to use the java on PATH.")
    java = Path(java_home) / "bin" / "java"
    if not (java.is_file() and os.access(java, os.X_OK)):
        raise ConfigError(f"JAVA_HOME={java_home} has no executable bin/java, so Spark cannot start its JVM. {fix}")
    try:
        release = (Path(java_home) / "release").read_text(errors="replace")
    except OSError:
        return  # an unusual layout: let the JVM speak for itself
    found = re.search(r'^JAVA_VERSION="(1\.)?(\d+)', release, re.MULTILINE)
    if found and int(found.group(2)) < MIN_JAVA:
        raise ConfigError(f"JAVA_HOME={java_home} is Java {found.group(2)}; Spark {pyspark_version()} needs Java "
                          f"{MIN_JAVA} or newer. {fix}")


def _jdk_tool(name: str, doing: str, note: str) -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / name
        if candidate.is_file():
            return str(candidate)
    found = shutil.which(name)
    if found:
        return found
    where = f"JAVA_HOME={java_home} has no bin/{name} and " if java_home else ""
    raise JarError(f"{doing}: {where}no `{name}` is on PATH{' ' + note if note else ''}. {_JDK_HINT}")


def _source_files():
    """Every (path, relative name) compiled or packed into the jar, in a stable order."""
    files = []
    for root in SOURCE_ROOTS:
        for sub in ("src", "resources"):
            base = root / sub
            if base.is_dir():
                files += [(p, f"{sub}/{p.relative_to(base).as_posix()}")
                          for p in base.rglob("*") if p.is_file()]
    return sorted(files, key=lambda pr: pr[1])


def _keys_json() -> str:
    return KEYS.to_json()


def _write_jar(jar: Path, classes: Path, spark_version: str, sources_hash: str) -> None:
    info = (f"package.version={PACKAGE_VERSION}\nspark.version={spark_version}\n"
            f"source.hash={sources_hash}\n")
    with zipfile.ZipFile(jar, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: sparkrm\n"
                   f"Implementation-Title: sparkrm\nImplementation-Version: {PACKAGE_VERSION}\n")
        for path in sorted(classes.rglob("*.class")):
            z.write(path, path.relative_to(classes).as_posix())
        resources = {}
        for path, rel in _source_files():
            if rel.startswith("resources/"):
                resources.setdefault(rel[len("resources/"):], []).append(path)
        for name, paths in sorted(resources.items()):
            if name.startswith("META-INF/services/"):  # one registration file, every tree's lines
                z.writestr(name, "".join(p.read_text().rstrip("\n") + "\n" for p in paths))
            elif len(paths) > 1:
                raise JarError(f"Two source trees ship the resource {name}: {', '.join(map(str, paths))}; keep one.")
            else:
                z.write(paths[0], name)
        z.writestr(_BUILD_INFO, info)
        z.writestr(_KEYS_RESOURCE, _keys_json())


def cache_dir() -> Path:
    """sparkrm's folder in the user's cache (``$XDG_CACHE_HOME/sparkrm`` or ``~/.cache/sparkrm``): built jars,
    generated TPC-H data, compiled benchmark classes."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "sparkrm"


def _writable(folder: Path) -> bool:
    """Whether ``folder`` exists and is writable, or could be created."""
    while not folder.exists():
        folder = folder.parent
    return os.access(folder, os.W_OK)
