"""One home per system: each system's Java sits beside its Python, and the core names no system."""

import re
from pathlib import Path

from spark_plugin.jar import SOURCE_ROOTS

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "spark_plugin" / "jvm"
#: Each system's source tree and the one Java package it holds.
SYSTEMS = {ROOT / "spark_plugin" / "advisor" / "jvm": "advisor", ROOT / "spark_plugin" / "slaq" / "jvm": "slaq",
           ROOT / "spark_plugin" / "wrangler" / "jvm": "wrangler", ROOT / "shuffle_merge" / "jvm": "riffle"}


def java_files(tree: Path):
    return sorted((tree / "src").rglob("*.java"))


def test_every_source_tree_is_the_core_or_one_system():
    assert set(SOURCE_ROOTS) == {CORE, *SYSTEMS}


def test_the_core_names_no_system():
    systems = "|".join(SYSTEMS.values())
    named = [f"{path.relative_to(ROOT)}: {m.group(0)}" for path in java_files(CORE)
             for m in re.finditer(rf"dev\.sparkrm\.({systems})\.\w+", path.read_text())]
    assert not named, f"the core names a system: {named}"


def test_each_system_tree_holds_its_own_package_only():
    for tree, package in SYSTEMS.items():
        files = java_files(tree)
        assert files, tree
        assert {f.parent.relative_to(tree / "src").as_posix() for f in files} == {f"dev/sparkrm/{package}"}


def test_every_system_the_core_starts_is_registered_in_its_own_tree():
    for tree in SYSTEMS:
        implementations = {f"dev.sparkrm.{f.parent.name}.{f.stem}" for f in java_files(tree)
                           if re.search(r"implements\s+SparkrmSystem\b", f.read_text())}
        services = tree / "resources" / "META-INF" / "services" / "dev.sparkrm.SparkrmSystem"
        registered = set(services.read_text().split()) if services.exists() else set()
        assert implementations == registered, tree


def test_the_python_core_imports_no_system():
    """spark_plugin's own modules (not its system subpackages) never import a system: a system's Python side
    that the core starts is named as data (``Feature.on_session``)."""
    systems = r"(advisor|rotary|slaq|wrangler)"
    core = sorted((ROOT / "spark_plugin").glob("*.py"))
    named = [f"{path.name}: {m.group(0).strip()}" for path in core for m in re.finditer(
        rf"^\s*(from\s+(\.|spark_plugin\.){systems}\b|import\s+spark_plugin\.{systems}\b|from\s+shuffle_merge\b"
        r"|import\s+shuffle_merge\b).*$", path.read_text(), flags=re.M)]
    assert not named, f"the core imports a system: {named}"


def test_the_shared_utility_allocator_imports_neither_spark_nor_a_system():
    """Every arbiter allocates through spark_plugin.utility, so it must stay importable on its own."""
    sources = sorted((ROOT / "spark_plugin" / "utility").glob("*.py"))
    named = [f"{path.name}: {m.group(0).strip()}" for path in sources for m in re.finditer(
        r"^\s*(from|import)\s+(pyspark|py4j|\.\.|spark_plugin(?!\.utility))\b.*$", path.read_text(), flags=re.M)]
    assert sources and not named, f"spark_plugin.utility imports {named}"
