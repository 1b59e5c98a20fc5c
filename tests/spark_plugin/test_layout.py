"""One rule for where a system lives (docs/architecture.md), checked for every system.

Three homes (``spark_plugin/``, ``tf_packing/``, ``shuffle_merge/``). In each, the top-level modules are the
home's core, which names no system; each system is one folder holding its Python, its Java (``jvm/src``) and
its resources (``jvm/resources``, schemas included); pieces several systems use sit in ``spark_plugin/shared``,
which no system owns. A system imports its own folder, the cores, the shared place and, where it builds on
another system, that system's package (the names its ``__init__`` exports), never another system's module.
"""

import ast
import graphlib
import re
import sys
from pathlib import Path

import pytest

from spark_plugin.jar import SOURCE_ROOTS

ROOT = Path(__file__).resolve().parents[2]
SHARED = "spark_plugin.shared"
#: Every system: its package, and the Java package its ``jvm/src`` holds (None: Python only).
SYSTEMS = {"advisor": ("spark_plugin.advisor", "advisor"), "rotary": ("spark_plugin.rotary", None),
           "slaq": ("spark_plugin.slaq", "slaq"), "wrangler": ("spark_plugin.wrangler", "wrangler"),
           "pigeon": ("spark_plugin.pigeon", None), "yaq": ("spark_plugin.yaq", None),
           "riffle": ("shuffle_merge", "riffle"),
           "repack": ("tf_packing.repack", None), "tuner": ("tf_packing.tuner", None), "dlt": ("tf_packing.dlt", None)}
HOMES = ("spark_plugin", "tf_packing")
#: Folders of a home that are neither a system nor the shared place: the core's Java and the built jar.
CORE_FOLDERS = {"jvm", "jars", "__pycache__"}
PACKAGES = {package for package, _ in SYSTEMS.values()}


def folder(package: str) -> Path:
    return ROOT.joinpath(*package.split("."))


def python_files(package: str):
    return sorted(folder(package).rglob("*.py"))


def java_files(tree: Path):
    return sorted((tree / "src").rglob("*.java"))


def system_of(module: str) -> str | None:
    """The system package ``module`` belongs to, if any."""
    return next((p for p in PACKAGES if module == p or module.startswith(p + ".")), None)


def imports(path: Path, package: str):
    """(line, absolute module, names) for every import in ``path``, relative ones resolved."""
    # Relative imports start from the package holding the file (an __init__'s own package).
    here = package.split(".") + list(path.relative_to(folder(package)).parent.parts)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            base = here[:len(here) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            yield node.lineno, module, tuple(a.name for a in node.names)


def test_every_folder_of_a_home_is_a_system_the_shared_place_or_the_core():
    found = {f"{home}.{d.name}" for home in HOMES for d in (ROOT / home).iterdir()
             if d.is_dir() and d.name not in CORE_FOLDERS}
    assert found == (PACKAGES - {"shuffle_merge"}) | {SHARED}, \
        "a folder under a home is a system: add it to SYSTEMS here and to docs/architecture.md"


def test_no_system_imports_another_systems_module():
    crossings = []
    for name, (package, _) in SYSTEMS.items():
        for path in python_files(package):
            for line, module, names in imports(path, package):
                other = system_of(module)
                if other in (None, package):
                    continue
                if module != other:  # reached into a module of another system
                    crossings.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
                    continue
                exported = set(__import__(other, fromlist=["__all__"]).__all__)
                crossings += [f"{path.relative_to(ROOT)}:{line} imports {other}.{n}, which it does not export"
                              for n in names if n not in exported]
    assert not crossings, "\n".join(crossings)


def test_the_code_imports_every_module_of_ours_at_its_own_path():
    """No module of ours is imported through an old path that the deprecation finder still answers."""
    stale = [f"{path.relative_to(ROOT)}:{line} imports {module}"
             for package in (*HOMES, "shuffle_merge") for path in python_files(package)
             for line, module, _ in imports(path, package)
             if module.split(".")[0] in (*HOMES, "shuffle_merge")
             and not (folder(module).with_suffix(".py").is_file() or (folder(module) / "__init__.py").is_file())]
    assert not stale, "\n".join(stale)


@pytest.mark.parametrize("home", HOMES)
def test_a_homes_core_imports_no_system(home):
    """The top-level modules (not the home's ``__init__``, which re-exports systems lazily as data) name none."""
    named = [f"{path.relative_to(ROOT)}:{line} imports {module}"
             for path in sorted((ROOT / home).glob("*.py")) if path.name != "__init__.py"
             for line, module, _ in imports(path, home) if system_of(module)]
    assert not named, "\n".join(named)


def test_the_shared_place_imports_no_system_and_neither_spark_nor_tensorflow():
    """Every arbiter allocates through it and Keras jobs parse criteria with it: it must import on its own."""
    named = [f"{path.relative_to(ROOT)}:{line} imports {module}" for path in python_files(SHARED)
             for line, module, _ in imports(path, SHARED)
             if system_of(module) or module.split(".")[0] in ("pyspark", "py4j", "tensorflow", "keras")]
    assert not named, "\n".join(named)


def module_of(path: Path, package: str) -> str:
    """The dotted name of the module at ``path`` inside ``package`` (a package's ``__init__``: the package)."""
    parts = path.relative_to(folder(package)).with_suffix("").parts
    return ".".join([package, *parts[:-1]] + ([] if parts[-1] == "__init__" else [parts[-1]]))


def import_graph(package: str) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports, at the top or inside a function (a deferred import
    still joins two modules: it only hides the circle from the interpreter), a package's ``__init__`` left
    out (it re-exports its modules, which is no dependency of theirs on each other)."""
    modules = {module_of(p, package): p for p in python_files(package) if p.name != "__init__.py"}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for _, module, names in imports(path, package):
            targets |= {m for m in (module, *(f"{module}.{n}" for n in names)) if m in modules and m != name}
        graph[name] = targets
    return graph


def circle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle of ``graph`` (its modules, the first repeated last), or [] when there is none."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as e:
        return e.args[1]
    return []


@pytest.mark.parametrize("package", sorted(PACKAGES | {SHARED}))
def test_no_system_has_an_import_circle(package):
    """A circle means no module of it can be read, changed or tested without the others."""
    found = circle(import_graph(package))
    assert not found, " -> ".join(found)


def test_the_old_flat_paths_still_import_with_a_deprecation_warning():
    for old, new in [("tf_packing.hyperband", "tf_packing.tuner.hyperband"),
                     ("tf_packing.batching", "tf_packing.repack.batching"),
                     ("spark_plugin.utility", "spark_plugin.shared.utility"),
                     ("spark_plugin.rotary.criteria", "spark_plugin.shared.criteria"),
                     ("spark_plugin.curves", "spark_plugin.shared.curves")]:
        sys.modules.pop(old, None)
        with pytest.warns(DeprecationWarning, match=re.escape(f"{old} moved to {new}")):
            module = __import__(old, fromlist=["_"])
        assert module is sys.modules[new]


# The Java side: the core's tree and one tree per system that has Java, each holding its own package.

CORE_JAVA = ROOT / "spark_plugin" / "jvm"
JAVA = {folder(package) / "jvm": java for package, java in SYSTEMS.values() if java}


def test_every_source_tree_is_the_core_or_one_system():
    assert set(SOURCE_ROOTS) == {CORE_JAVA, *JAVA}
    trees = {p.parent for home in (*HOMES, "shuffle_merge") for p in (ROOT / home).glob("**/jvm/src")}
    assert trees == {CORE_JAVA, *JAVA}, "a jvm/src tree nobody builds"


def test_the_core_names_no_system_in_its_java_or_its_resources():
    systems = "|".join(JAVA.values())
    named = [f"{path.relative_to(ROOT)}: {m.group(0)}" for path in java_files(CORE_JAVA)
             for m in re.finditer(rf"dev\.sparkrm\.({systems})\.\w+", path.read_text())]
    named += [str(p.relative_to(ROOT)) for p in (CORE_JAVA / "resources").rglob("*")
              if set(p.relative_to(CORE_JAVA / "resources").parts) & set(JAVA.values())]
    assert not named, f"the core names a system: {named}"


def test_each_system_tree_holds_its_own_package_only():
    for tree, package in JAVA.items():
        files = java_files(tree)
        assert files, tree
        assert {f.parent.relative_to(tree / "src").as_posix() for f in files} == {f"dev/sparkrm/{package}"}


def test_every_system_the_core_starts_is_registered_in_its_own_tree():
    for tree in JAVA:
        implementations = {f"dev.sparkrm.{f.parent.name}.{f.stem}" for f in java_files(tree)
                           if re.search(r"implements\s+SparkrmSystem\b", f.read_text())}
        services = tree / "resources" / "META-INF" / "services" / "dev.sparkrm.SparkrmSystem"
        registered = set(services.read_text().split()) if services.exists() else set()
        assert implementations == registered, tree


def test_the_architecture_page_names_every_system_folder():
    page = (ROOT / "docs" / "architecture.md").read_text()
    missing = [p for p in (*PACKAGES, SHARED) if f"{p.replace('.', '/')}/" not in page]
    assert not missing, f"docs/architecture.md does not show {missing}"
