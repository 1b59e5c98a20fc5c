"""Packaging for sparkrm: Python packages plus the plugin jar compiled at install time.

``build_py`` compiles the Java sources with ``javac`` against the jars of the
pyspark in the build environment (declared in ``setup_requires``, which pip
installs into its isolated build environment) and ships the jar as package
data in ``spark_plugin/jars/``. Editable installs write it into the source
tree. Without a JDK the install still succeeds with a warning and the jar is
built on first use, where a missing JDK becomes an error naming the package to
install. At run time a jar built for another pyspark version is rebuilt.
"""

import logging
import re
import sys
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
PYSPARK = "pyspark>=4.1.1,<4.2"
#: The benchmark harnesses: TPC-H data generator, DuckDB oracle, report plots.
BENCH = ["tpchgen-cli>=2", "duckdb>=1.1", "matplotlib>=3.7"]
#: Peers the benchmarks compare with, not needed by the tests: Keras Tuner (with the TensorFlow backend it
#: imports tensorboard in every trial, which TensorFlow no longer brings).
PEERS = ["keras-tuner>=1.4", "tensorboard"]
#: Repack (tf_packing): only its users need TensorFlow; the Spark plugins do not.
TF = ["tensorflow>=2.16"]
#: The tests run TensorFlow on the CPU: its CPU-only build is a third of the download where it exists.
TF_TESTS = ['tensorflow-cpu>=2.16; platform_system == "Linux" and platform_machine == "x86_64"',
            'tensorflow>=2.16; platform_system != "Linux" or platform_machine != "x86_64"']


class BuildPyWithJar(build_py):
    """Build the Python packages, then compile the plugin jar next to them."""

    def run(self):
        super().run()
        sys.path.insert(0, str(HERE))
        from spark_plugin.errors import SparkrmError
        from spark_plugin.jar import JAR_NAME, build_jar

        root = HERE if self.editable_mode else Path(self.build_lib)
        target = root / "spark_plugin" / "jars" / JAR_NAME
        try:
            print(f"sparkrm: compiled {build_jar(target)}")
        except SparkrmError as e:
            logging.warning("sparkrm: the plugin jar was not built now and will be built on first use. %s", e)


def long_description() -> str:
    """README for the package index: a page there has no source tree, so relative links become paths."""
    def path(link):
        text, target = link.group(1), link.group(2)
        return f"`{target}`" if text.strip("`") == target else f"{text} (`{target}`)"

    note = "\n\nPaths such as `docs/riffle.md` refer to sparkrm's source repository.\n"
    return re.sub(r"\[([^\]]+)\]\((?!https?://|#)([^)]+)\)", path, (HERE / "README.md").read_text()) + note


def version() -> str:
    namespace = {}
    exec((HERE / "spark_plugin" / "_version.py").read_text(), namespace)
    return namespace["__version__"]


setup(
    name="sparkrm",
    version=version(),
    description="Resource-management plugins for Apache Spark and TensorFlow: shuffle merging (Riffle), "
                "online aggregation (Rotary-AQP), quality-driven scheduling (SLAQ), straggler "
                "avoidance (Wrangler), packed Keras training (Repack) and a TPC-H harness.",
    long_description=long_description(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["spark_plugin*", "shuffle_merge*", "tf_packing*"]),
    package_data={
        "spark_plugin": ["jars/*.jar", "jvm/src/**/*.java", "jvm/resources/**/*"],
        "spark_plugin.advisor": ["jvm/src/**/*.java"],
        "spark_plugin.slaq": ["jvm/src/**/*.java"],
        "spark_plugin.wrangler": ["jvm/src/**/*.java", "jvm/resources/**/*"],
        "shuffle_merge": ["jvm/src/**/*.java", "jvm/resources/**/*"],
        "spark_plugin.rotary": ["queries/*.sql"],
    },
    include_package_data=False,
    setup_requires=[PYSPARK],
    install_requires=[PYSPARK, "py4j", "pyarrow>=14", "pandas>=2.2", "numpy", "scikit-learn>=1.4", "scipy",
                      "tqdm", "rich", "jsonschema>=4.18"],
    extras_require={"tf": TF, "bench": BENCH, "peers": PEERS, "all": TF + BENCH + PEERS,
                    "test": TF_TESTS + BENCH + ["pytest>=8", "pytest-spark>=0.6", "pytest-xdist>=3.5",
                                                "pytest-timeout>=2.3", "hypothesis"]},
    entry_points={"console_scripts": ["sparkrm=spark_plugin.__main__:main"]},
    cmdclass={"build_py": BuildPyWithJar},
)
