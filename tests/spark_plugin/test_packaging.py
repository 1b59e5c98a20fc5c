"""What an installation needs: the Spark plugins install and import without TensorFlow."""

import ast
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
WITHOUT_TF = "import sys; sys.modules['tensorflow'] = None; sys.modules['keras'] = None; "


def setup_call() -> dict:
    """The keyword arguments of setup.py's setup() call, as literals where they are literals."""
    tree = ast.parse((PROJECT / "setup.py").read_text())
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "setup")
    return {k.arg: k.value for k in call.keywords}


def test_tensorflow_is_an_extra_not_a_requirement():
    kwargs = setup_call()
    requires = ast.unparse(kwargs["install_requires"])
    assert "tensorflow" not in requires and "keras" not in requires
    assert '"tf": TF' in ast.unparse(kwargs["extras_require"]).replace("'", '"')


def test_the_spark_side_imports_without_tensorflow_and_tf_packing_says_what_to_install():
    code = WITHOUT_TF + ("import spark_plugin, shuffle_merge, spark_plugin.slaq, spark_plugin.wrangler, "
                         "spark_plugin.rotary, tf_packing; tf_packing.BatchPlanner(10)\n"
                         "try:\n    tf_packing.pack\nexcept ImportError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PROJECT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ("tf_packing.pack needs TensorFlow, which this installation lacks. Install it with: "
                                  "pip install 'sparkrm[tf]'")


def test_the_long_description_has_no_relative_links():
    import re

    namespace = {"__file__": str(PROJECT / "setup.py")}
    source = (PROJECT / "setup.py").read_text().split("\nsetup(")[0]  # the module without running setup()
    exec(compile(source, "setup.py", "exec"), namespace)
    text = namespace["long_description"]()
    targets = re.findall(r"\]\(([^)]+)\)", text)
    assert all(t.startswith(("http://", "https://", "#")) for t in targets), targets
    assert "`docs/riffle.md`" in text and "refer to sparkrm's source repository" in text
