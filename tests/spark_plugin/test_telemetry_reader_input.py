"""A telemetry file whose schema line is malformed is refused in one line naming the file, what is wrong and the fix."""

from __future__ import annotations

import json

import pytest

from spark_plugin.errors import SparkrmError
from spark_plugin.telemetry_reader import read_telemetry

FIX = r"Pass a file written under spark\.sparkrm\.telemetry\.dir, as sparkrm wrote it\.$"


@pytest.mark.parametrize("header, why", [
    ('{"schemas":{}}', r"its schema line declares no record type \(sparkrm writes task, stage, job, executor at least\)"),
    ('{"schemas":[]}', r"its schema line's \"schemas\" is list, not an object of record types"),
    ('{"schemas":{"job":null}}', r"its schema line's 'job' schema is not a list of \[name, type\] pairs"),
    ('{"schemas":{"job":[["jobId","long"]]}}', r"its schema line's 'job' schema is not a list of \[name, type\] pairs "
                                              r"with types int, double, string, bool, int_list"),
    ('[{"schemas":{}}]', r"is not a sparkrm telemetry file: its first line is not the schema record"),
    ('{"seq":0,"type":"schema","sche', r"is not a sparkrm telemetry file: its first line is not the schema record"),
])
def test_a_malformed_schema_line_is_one_line_naming_the_file(tmp_path, header, why):
    path = tmp_path / "app.telemetry.jsonl"
    path.write_text(header + '\n{"seq":1,"type":"job","jobId":1}\n')
    with pytest.raises(SparkrmError, match=rf"^{path}:? {why}.*{FIX}") as raised:
        read_telemetry(path)
    assert "\n" not in str(raised.value)


def test_a_record_of_a_type_the_schema_line_does_not_declare_is_named(tmp_path):
    path = tmp_path / "app.telemetry.jsonl"
    path.write_text(json.dumps({"schemas": {"job": [["jobId", "int"]]}}) + '\n{"seq":1,"type":"stage","stageId":1}\n')
    with pytest.raises(SparkrmError, match=rf"^{path}, line 2: a stage record, a type the schema line does not "
                                           r"declare; 1 damaged line\(s\) in all\. Pass skip_corrupt=True"):
        read_telemetry(path)
    assert read_telemetry(path, skip_corrupt=True)["job"].num_rows == 0
