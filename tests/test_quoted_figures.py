"""Figures quoted in README.md and docs/*.md equal the recorded results they name (no Spark, no TensorFlow)."""

from __future__ import annotations

import json

import pytest

from benchmarks.quoted_figures import (PROJECT_DIR, AnnotationError, Figure, appears, check, check_document,
                                       documents, find_annotations, matches, parse_annotation, parse_figure)

RESULT = "benchmarks/results/demo/2026-01-01-abc1234.run.json"
RECORDED = {
    "summary": {"ratio": 0.2587, "error": 0.0908630, "count": 21, "name": "ipso", "flag": True},
    "conf": {"maps": 10000, "spark.cores.max": 6},
    "runs": [{"job_s": 220.384}, {"job_s": 57.726}],
    "by_mode": {"N=10 best-effort": {"reads": 29}},
}


@pytest.mark.parametrize("doc", documents(), ids=lambda p: p.relative_to(PROJECT_DIR).as_posix())
def test_quoted_figures_equal_their_recorded_results(doc):
    _, problems = check_document(doc)
    assert not problems, "\n".join(problems)


def test_readme_annotates_each_measured_system():
    found, problems = find_annotations(PROJECT_DIR / "README.md")
    assert not problems
    folders = {a.result.split("/")[2] for a in found}
    assert {"riffle", "wrangler", "repack", "advisor"} <= folders


def make_doc(tmp_path, text, data=RECORDED):
    result = tmp_path / RESULT
    result.parent.mkdir(parents=True)
    result.write_text(json.dumps(data))
    doc = tmp_path / "README.md"
    doc.write_text(text)
    return doc


def problems_of(tmp_path, text):
    doc = make_doc(tmp_path, text)
    found, problems = find_annotations(doc, tmp_path)
    for annotation in found:
        problems += check(annotation, tmp_path)
    return problems


def test_parse_annotation_reads_file_and_figures():
    result, figures = parse_annotation(
        f'<!-- figures: {RESULT} summary.ratio=0.26x by_mode."N=10 best-effort".reads=29 '
        f'conf."spark.cores.max"=6 runs.0.job_s/runs.1.job_s=3.8x conf.maps=10,000 summary.error=9.1% -->')
    assert result == RESULT
    assert [f.paths for f in figures] == [
        (("summary", "ratio"),), (("by_mode", "N=10 best-effort", "reads"),), (("conf", "spark.cores.max"),),
        (("runs", "0", "job_s"), ("runs", "1", "job_s")), (("conf", "maps"),), (("summary", "error"),)]
    assert [(f.number, f.decimals, f.unit) for f in figures] == [
        (0.26, 2, "x"), (29, 0, ""), (6, 0, ""), (3.8, 1, "x"), (10000, 0, ""), (9.1, 1, "%")]


@pytest.mark.parametrize("line, message", [
    (f"<!-- figure: {RESULT} summary.ratio=0.26x -->", "starts with '<!-- figures:'"),
    (f"<!--figures: {RESULT} summary.ratio=0.26x -->", "starts with '<!-- figures:'"),
    (f"<!-- figures: {RESULT} summary.ratio=0.26x", "ends with '-->' on the same line"),
    ("<!-- figures: -->", "no result file and no figures"),
    (f"<!-- figures: {RESULT} -->", "no FIELD=QUOTED figures after"),
    ("<!-- figures: summary.ratio=0.26x -->", "the first word names the result file"),
    ("<!-- figures: benchmarks/results/demo/run.md summary.ratio=0.26x -->", "a .json under benchmarks/results/"),
    ("<!-- figures: benchmarks/results/../setup.json a=1 -->", "a .json under benchmarks/results/"),
    (f"<!-- figures: {RESULT} summary.ratio -->", "'summary.ratio' is not FIELD=QUOTED"),
    (f"<!-- figures: {RESULT} =0.26x -->", "'=0.26x' is not FIELD=QUOTED"),
    (f"<!-- figures: {RESULT} summary.ratio=about -->", "quoted figure 'about' is not a number"),
    (f"<!-- figures: {RESULT} summary.ratio=0.26X -->", "is not a number, optionally followed by % or x"),
    (f"<!-- figures: {RESULT} summary.ratio=1,00 -->", "quoted figure '1,00' is not a number"),
    (f"<!-- figures: {RESULT} summary..ratio=0.26x -->", "expected a key at character 9"),
    (f'<!-- figures: {RESULT} summary."".ratio=0.26x -->', "expected a key at character 9"),
    (f'<!-- figures: {RESULT} summary."a"b=0.26x -->', "expected '.' at character 12"),
    (f'<!-- figures: {RESULT} summary."ratio=0.26x -->', "unbalanced double quote"),
    (f"<!-- figures: {RESULT} a/b/c=1x -->", "one path or the ratio of two"),
    (f"<!-- figures: {RESULT} a/=1x -->", "empty field path"),
    (f"<!-- figures: {RESULT} a--b=1 -->", "'--' may not appear inside an HTML comment"),
])
def test_parse_annotation_rejects_malformed_annotations(line, message):
    with pytest.raises(AnnotationError, match=message.replace("(", r"\(").replace(".", r"\.")):
        parse_annotation(line)


@pytest.mark.parametrize("quoted, value, ok", [
    ("0.26x", 0.2587, True), ("0.26x", 0.2649, True), ("0.26x", 0.2651, False), ("0.3x", 0.2587, True),
    ("9.1%", 0.0908630, True), ("9.1%", 0.0904, False), ("10.0%", 0.09988, True), ("10%", 0.0951, True),
    ("211", 211.446, True), ("211", 211.5001, False), ("0.9710", 0.97104, True), ("0.971", 0.9716, False),
    ("10,000", 10000, True), ("0.08x", 0.085, True), ("0.09x", 0.085, True), ("-7%", -0.0716, True),
])
def test_figure_matches_at_the_precision_quoted(quoted, value, ok):
    assert matches(parse_figure(f"a={quoted}"), value) is ok


@pytest.mark.parametrize("quoted, text, ok", [
    ("0.26x", "takes 0.26x of vanilla's time", True),
    ("0.26x", "takes 0.26 of vanilla's time", False),
    ("10.1%", "within 10.1-10.3% against", True),
    ("10.3%", "within 10.1-10.3% against", True),
    ("2.55x", "range 2.55-3.62x)", True),
    ("0.70", "interval [0.70, 2.12]", True),
    ("21", "for 21, 20 and 4 of 4 jobs", True),
    ("4", "for 21, 20 and 4 of 4 jobs", True),
    ("1", "for 21, 20 and 4 of 4 jobs", False),
    ("1.5", "took 1.55 s", False),
    ("10", "10,000 maps", False),
    ("000", "10,000 maps", False),
    ("10,000", "and 10,000 maps", True),
    ("9.1%", "median 19.1%", False),
])
def test_quoted_figure_must_appear_in_the_text(quoted, text, ok):
    assert appears(parse_figure(f"a={quoted}"), text) is ok


@pytest.mark.parametrize("text", [
    pytest.param("A job takes 0.26x of vanilla's time, 9.1% off, for 21 jobs;\n"
                 "10,000 maps on 6 cores, 29 reads, 3.8x faster.\n"
                 f"<!-- figures: {RESULT} summary.ratio=0.26x summary.error=9.1% summary.count=21 "
                 f"conf.maps=10,000 -->\n"
                 f'<!-- figures: {RESULT} conf."spark.cores.max"=6 by_mode."N=10 best-effort".reads=29 '
                 f"runs.0.job_s/runs.1.job_s=3.8x -->\n", id="every-form"),
    pytest.param("| arm | ratio |\n|---|---|\n| riffle | 0.26x |\n| jobs | 21 |\n"
                 f"<!-- figures: {RESULT} summary.ratio=0.26x summary.count=21 -->\n", id="table-as-one-block"),
    pytest.param("An example:\n\n```markdown\nIt took 0.99x.\n"
                 "<!-- figures: benchmarks/results/demo/gone.json a=0.99x -->\n```\n", id="code-fence-not-checked"),
])
def test_matching_figures_pass(tmp_path, text):
    assert problems_of(tmp_path, text) == []


@pytest.mark.parametrize("text, problem", [
    pytest.param("# Title\n\nA job takes 0.27x of vanilla's time, 9.1% off.\n"
                 f"<!-- figures: {RESULT} summary.ratio=0.27x summary.error=9.1% -->\n",
                 f"README.md:4: summary.ratio: quoted 0.27x, recorded 0.2587x in {RESULT}", id="drifted-ratio"),
    pytest.param(f"Off by 9.2%.\n<!-- figures: {RESULT} summary.error=9.2% -->\n",
                 f"README.md:2: summary.error: quoted 9.2%, recorded 9.0863% in {RESULT}", id="drifted-percent"),
    pytest.param("It took 0.26x, for 21 jobs.\n"
                 f"<!-- figures: {RESULT} summary.ratio=0.26x -->\n<!-- figures: {RESULT} summary.count=22 -->\n",
                 "README.md:3: summary.count: quoted 22 does not appear in the text above the annotation",
                 id="stacked-annotations-read-the-same-paragraph"),
    pytest.param("It took 0.26x.\n\nThe next paragraph changed its figure to 0.25x.\n"
                 f"<!-- figures: {RESULT} summary.ratio=0.26x -->\n",
                 "README.md:4: summary.ratio: quoted 0.26x does not appear in the text above the annotation",
                 id="not-in-the-paragraph-above"),
    pytest.param(f"It took 0.26x.\n\n<!-- figures: {RESULT} summary.ratio=0.26x -->\n",
                 "README.md:3: figures annotation follows a blank line: put it right after the text that quotes "
                 "the figures", id="after-a-blank-line"),
    pytest.param("It took 0.26x.\n<!-- figures: benchmarks/results/demo/gone.json a=0.26x -->\n",
                 "README.md:2: result file benchmarks/results/demo/gone.json does not exist", id="no-result-file"),
    pytest.param(f"It took 0.26x.\n<!-- figure: {RESULT} summary.ratio=0.26x -->\n",
                 "README.md:2: malformed figures annotation: an annotation starts with '<!-- figures:' (one space "
                 "each side of 'figures:'), got '<!-- figure: benchmarks/'", id="malformed"),
])
def test_a_problem_is_one_line_naming_doc_line_field_and_values(tmp_path, text, problem):
    assert problems_of(tmp_path, text) == [problem]


@pytest.mark.parametrize("field, message", [
    ("summary.missing", f"no key 'missing' under summary of {RESULT} (keys: ratio, error, count, name, flag)"),
    ("nothing.ratio", f"no key 'nothing' under the top level of {RESULT} (keys: summary, conf, runs, by_mode)"),
    ("runs.2.job_s", f"runs of {RESULT} is a list of 2: '2' is no index in it"),
    ("summary.count.more", f"summary.count of {RESULT} is 21, not an object or list"),
    ("summary.name", f"summary.name in {RESULT} is 'ipso', not a number"),
    ("summary.flag", f"summary.flag in {RESULT} is True, not a number"),
])
def test_a_field_that_is_not_a_recorded_number_fails(tmp_path, field, message):
    problems = problems_of(tmp_path, f"Quoted 21.\n<!-- figures: {RESULT} {field}=21 -->\n")
    assert problems == [f"README.md:2: {field}: {message}"]


def test_figure_is_a_plain_value():
    figure = parse_figure("summary.ratio=0.26x")
    assert figure == Figure(field="summary.ratio", paths=(("summary", "ratio"),), quoted="0.26x", number=0.26,
                            decimals=2, unit="x")
