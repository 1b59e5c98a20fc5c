"""``python -m benchmarks.advisor``'s inputs and outputs: a result to refit that is not one is refused in one line;
its result and report are written only over files it wrote (an earlier run's refit here, no workload is run)."""

import subprocess
import sys
from pathlib import Path

import pytest

RECORDED = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "advisor" / "2026-11-26-2b28858.jobs.json"


def advisor_benchmark(*args):
    return subprocess.run([sys.executable, "-m", "benchmarks.advisor", *map(str, args)], capture_output=True,
                          text=True, timeout=300)


def refused(out, start: str) -> None:
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.startswith(start), out.stderr


@pytest.mark.parametrize("text, why", [
    ("runs: 3\n", "is not JSON (Expecting value: line 1 column 1 (char 0))."),
    ('{"queries": {}}', "is JSON but not a result of this benchmark (its meta.conf and each job's runs)."),
    ('{"meta": {"conf": {}}, "summary": {}, "queries": {"q1": {"runs": [{"slots": "two"}]}}}',
     "is JSON but not a result of this benchmark"),
])
def test_analyze_refuses_a_file_that_is_not_a_result_in_one_line(tmp_path, text, why):
    bad = tmp_path / "result.json"
    bad.write_text(text)
    refused(advisor_benchmark("--analyze", bad, "--out", tmp_path / "out"), f"error: --analyze {bad} {why}")
    assert not (tmp_path / "out").exists()


def test_a_result_is_written_over_its_own_but_never_over_a_users_file(tmp_path):
    out = tmp_path / "results"
    first = advisor_benchmark("--analyze", RECORDED, "--out", out)
    assert first.returncode == 0, first.stderr
    (result,) = out.glob("*.jobs.json")
    report = result.with_suffix(".md")
    assert report.read_text().startswith("# Scaling advisor on jobs")
    again = advisor_benchmark("--analyze", RECORDED, "--out", out)  # the same commit, the same day: its own files
    assert again.returncode == 0, again.stderr
    report.write_text("my notes\n")
    refused(advisor_benchmark("--analyze", RECORDED, "--out", out),
            f"error: --out {report} exists and sparkrm did not write it")
    assert report.read_text() == "my notes\n"
    refused(advisor_benchmark("--analyze", RECORDED, "--out", report), f"error: --out {report} is a file")
    assert report.read_text() == "my notes\n"
