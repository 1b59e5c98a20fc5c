"""Reading a telemetry file as a crash or a bad disk leaves it: every intact record, and where the damage is."""

from __future__ import annotations

import json
import logging

import pytest

from spark_plugin.errors import SparkrmError
from spark_plugin.telemetry_reader import read_telemetry

SCHEMAS = {"task": [["taskId", "int"], ["status", "string"]], "job": [["jobId", "int"]]}


def write(path, *records, tail: bytes = b""):
    lines = [json.dumps({"schemas": SCHEMAS})] + [json.dumps(r, separators=(",", ":")) for r in records]
    path.write_bytes(("\n".join(lines) + "\n").encode() + tail)
    return path


def task(seq, task_id):
    return {"seq": seq, "type": "task", "taskId": task_id, "status": "SUCCESS"}


def test_a_half_written_last_record_is_skipped_with_its_size(tmp_path, caplog):
    path = write(tmp_path / "app.telemetry.jsonl.inprogress", task(1, 10), {"seq": 2, "type": "job", "jobId": 0},
                 tail=b'{"seq":3,"type":"task","taskId":1')
    with caplog.at_level(logging.WARNING):
        tables = read_telemetry(path)
    assert tables["task"]["taskId"].to_pylist() == [10] and tables["job"]["jobId"].to_pylist() == [0]
    assert "ends in a half-written record" in caplog.text and "skipped its last 33 bytes" in caplog.text


def test_a_complete_last_record_without_its_newline_is_kept(tmp_path):
    path = write(tmp_path / "app.telemetry.jsonl.inprogress", task(1, 10),
                 tail=json.dumps(task(2, 11), separators=(",", ":")).encode())
    assert read_telemetry(path)["task"]["taskId"].to_pylist() == [10, 11]


@pytest.mark.parametrize("damage, why", [
    (b'{"seq":2,"type":"task","taskId":"eleven","status":"SUCCESS"}', "not a valid task record"),
    (b'{"seq":2,"type":"tas\x00k","taskId":11}', "not a telemetry record"),
    (b'{"seq":2,"type":"task","taskId":11,"status":"SUC', "not a valid task record"),
])
def test_a_damaged_line_inside_names_file_and_line_or_is_skipped(tmp_path, caplog, damage, why):
    path = tmp_path / "app.telemetry.jsonl"
    write(path, task(1, 10))
    path.write_bytes(path.read_bytes() + damage + b"\n" + json.dumps(task(3, 12), separators=(",", ":")).encode() + b"\n")
    with pytest.raises(SparkrmError, match=rf"app.telemetry.jsonl, line 3: {why}.*1 damaged line\(s\) in all. "
                                           r"Pass skip_corrupt=True"):
        read_telemetry(path)
    with caplog.at_level(logging.WARNING):
        tables = read_telemetry(path, skip_corrupt=True)
    assert tables["task"]["taskId"].to_pylist() == [10, 12]
    assert "skipped 1 damaged line(s), the first at line 3" in caplog.text


def test_not_a_telemetry_file(tmp_path):
    bad = tmp_path / "x.jsonl"
    bad.write_text("hello\n")
    with pytest.raises(SparkrmError, match="is not a sparkrm telemetry file"):
        read_telemetry(bad)
    with pytest.raises(SparkrmError, match="Cannot read telemetry file"):
        read_telemetry(tmp_path / "missing.jsonl")
