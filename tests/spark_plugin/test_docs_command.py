"""``python -m spark_plugin docs``: a folder that is not the project is refused in one line, and ``--write``
rewrites only the block between the page's markers and an example configuration it generated, never a user's."""

import shutil
import subprocess
import sys
from pathlib import Path

from spark_plugin.__main__ import main
from spark_plugin.docs import BEGIN, END

PROJECT = Path(__file__).resolve().parents[2]


def project_copy(tmp_path) -> Path:
    """A folder laid out as the project: its configuration page and its generated example configuration."""
    (tmp_path / "docs").mkdir()
    shutil.copy(PROJECT / "docs" / "configuration.md", tmp_path / "docs")
    shutil.copytree(PROJECT / "conf", tmp_path / "conf")
    return tmp_path


def test_an_empty_folder_is_refused_in_one_line_naming_what_it_lacks(tmp_path):
    out = subprocess.run([sys.executable, "-m", "spark_plugin", "docs", "--project", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr == (f"error: --project {tmp_path} lacks docs/configuration.md and conf/: it is not the sparkrm "
                          "project folder. Run in the project's folder, or pass it as --project.\n")
    assert list(tmp_path.iterdir()) == []


def test_write_rewrites_only_the_generated_block_of_the_project_page(tmp_path):
    project = project_copy(tmp_path)
    page = project / "docs" / "configuration.md"
    head, rest = page.read_text().split(BEGIN)
    page.write_text(f"{head}{BEGIN}\n| stale |\n{END}{rest.split(END)[1]}")
    assert main(["docs", "--project", str(project)]) == 1
    assert main(["docs", "--write", "--project", str(project)]) == 0
    assert page.read_text() == (PROJECT / "docs" / "configuration.md").read_text()
    assert main(["docs", "--project", str(project)]) == 0


def test_write_refuses_a_page_without_the_markers_and_writes_nothing(tmp_path, capsys):
    project = project_copy(tmp_path)
    page = project / "docs" / "configuration.md"
    page.write_text("# My configuration notes\n")
    conf = project / "conf" / "spark-defaults.conf"
    conf.write_text(conf.read_text() + "# stale\n")
    before = {p: p.read_bytes() for p in (page, conf)}
    assert main(["docs", "--write", "--project", str(project)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {page} lacks the generated-table markers {BEGIN} ... {END}")
    assert {p: p.read_bytes() for p in (page, conf)} == before


def test_write_never_overwrites_a_users_spark_defaults(tmp_path, capsys):
    project = project_copy(tmp_path)
    conf = project / "conf" / "spark-defaults.conf"
    conf.write_text("spark.master yarn\n")
    page = project / "docs" / "configuration.md"
    before = page.read_bytes()
    assert main(["docs", "--write", "--project", str(project)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: docs --write {conf} exists and sparkrm did not write it")
    assert conf.read_text() == "spark.master yarn\n" and page.read_bytes() == before
