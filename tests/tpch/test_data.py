"""TPC-H data generation with the real tpchgen-cli (SF 0.01 takes about a second)."""

import json
import sys

import pytest

from benchmarks.tpch.data import TABLES, DataError, ensure_dataset, find_tpchgen, is_complete


def test_generated_data_is_complete_and_reused(tmp_path):
    folder = ensure_dataset(tmp_path, 0.01, 3)
    assert is_complete(folder)
    manifest = json.loads((folder / "_SUCCESS.json").read_text())
    assert manifest["sf"] == 0.01 and manifest["parts"] == 3
    assert {rel.split("/")[0] for rel in manifest["files"]} == set(TABLES)
    assert len(list((folder / "lineitem").glob("*.parquet"))) == 3
    stamp = (folder / "_SUCCESS.json").stat().st_mtime_ns
    assert ensure_dataset(tmp_path, 0.01, 3) == folder
    assert (folder / "_SUCCESS.json").stat().st_mtime_ns == stamp


def test_a_damaged_data_set_is_regenerated(tmp_path):
    folder = ensure_dataset(tmp_path, 0.01, 2)
    victim = next((folder / "orders").glob("*.parquet"))
    victim.write_bytes(b"truncated")
    assert not is_complete(folder)
    ensure_dataset(tmp_path, 0.01, 2)
    assert is_complete(folder) and victim.stat().st_size > 100


def test_a_flipped_byte_is_noticed_and_the_data_set_regenerated(tmp_path, caplog):
    from benchmarks.tpch.data import problem

    folder = ensure_dataset(tmp_path, 0.01, 1)
    victim = folder / "lineitem" / "lineitem.1.parquet"
    good = victim.read_bytes()
    damaged = bytearray(good)
    damaged[len(good) // 2] ^= 0x01  # same size: a size-only manifest would reuse it
    victim.write_bytes(bytes(damaged))
    assert problem(folder) == ("lineitem/lineitem.1.parquet changed on disk since it was generated "
                               "(its content digest differs)")
    with caplog.at_level("WARNING"):
        ensure_dataset(tmp_path, 0.01, 1)
    assert "cannot be reused: lineitem/lineitem.1.parquet changed on disk" in caplog.text
    assert victim.read_bytes() == good and problem(folder) is None


def test_a_folder_of_the_users_where_the_data_set_goes_is_never_replaced(tmp_path):
    mine = tmp_path / "sf0.01-parts1"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    with pytest.raises(DataError, match=r"the TPC-H data folder .*sf0.01-parts1 holds files sparkrm did not write "
                                        r"\(notes.txt\).*\(or pass another --data\)$"):
        ensure_dataset(tmp_path, 0.01, 1)
    assert (mine / "notes.txt").read_text() == "mine" and [p.name for p in tmp_path.iterdir()] == [mine.name]


@pytest.mark.parametrize("sf", [0, -1.0])
def test_scale_factor_must_be_positive(tmp_path, sf):
    with pytest.raises(DataError, match="scale factor must be > 0"):
        ensure_dataset(tmp_path, sf, 1)


def test_missing_tpchgen_names_the_package(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(DataError, match=r"tpchgen-cli was not found.*pip install tpchgen-cli"):
        find_tpchgen()
