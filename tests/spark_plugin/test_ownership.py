"""A folder or file is replaced only when sparkrm provably wrote it; the user's files survive every refusal."""

from __future__ import annotations

import pytest

from spark_plugin.errors import NotOursError
from spark_plugin.ownership import MARKER, PLOT, FolderKind, save_figure

CHECKPOINT = FolderKind("test checkpoint", ("state.json", "totals.parquet"))


def _users_folder(tmp_path):
    """A folder of the user's: a thesis and a folder of photos."""
    folder = tmp_path / "mine"
    (folder / "photos").mkdir(parents=True)
    (folder / "thesis.tex").write_text("\\documentclass{article}")
    (folder / "photos" / "a.jpg").write_bytes(b"\xff\xd8 jpeg")
    return folder


def _snapshot(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_folder_of_the_users_is_never_claimed_removed_or_replaced(tmp_path):
    folder = _users_folder(tmp_path)
    before = _snapshot(folder)
    staged = CHECKPOINT.claim(tmp_path / "staged")
    for attempt in (lambda: CHECKPOINT.claim(folder, what="--checkpoint"), lambda: CHECKPOINT.remove(folder),
                    lambda: CHECKPOINT.replace(folder, staged)):
        with pytest.raises(NotOursError, match=r"mine holds files sparkrm did not write \(photos, thesis.tex\): "
                                               r"sparkrm replaces a folder only when it holds a test checkpoint"):
            attempt()
    assert _snapshot(folder) == before and staged.is_dir()


def test_a_folder_that_holds_our_marker_and_one_file_of_the_users_is_not_ours(tmp_path):
    folder = CHECKPOINT.claim(tmp_path / "cp")
    (folder / "state.json").write_text("{}")
    assert CHECKPOINT.is_ours(folder)
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(NotOursError, match=r"\(notes.txt\)"):
        CHECKPOINT.remove(folder)
    assert (folder / "notes.txt").read_text() == "mine"


def test_a_folder_of_our_files_without_the_marker_is_not_taken_for_ours(tmp_path):
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "state.json").write_text("{}")
    with pytest.raises(NotOursError, match=f"holds no {MARKER} marker"):
        CHECKPOINT.check_writable(folder)


def test_another_kind_of_our_folders_is_not_replaced(tmp_path):
    folder = FolderKind("layout", ("state.json",)).claim(tmp_path / "f")
    with pytest.raises(NotOursError, match="holds a layout, not a test checkpoint"):
        CHECKPOINT.check_writable(folder)


def test_a_missing_or_empty_folder_is_claimed_and_ours_replaced(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    for folder in (tmp_path / "a" / "new", empty):
        CHECKPOINT.claim(folder)
        assert (folder / MARKER).is_file() and CHECKPOINT.is_ours(folder)
    staged = CHECKPOINT.claim(tmp_path / "staged")
    (staged / "state.json").write_text('{"v": 2}')
    CHECKPOINT.replace(empty, staged)
    assert (empty / "state.json").read_text() == '{"v": 2}' and not staged.exists()


def test_a_file_where_a_folder_goes_is_refused(tmp_path):
    (tmp_path / "f").write_text("mine")
    with pytest.raises(NotOursError, match="--checkpoint .*f is a file, not a folder"):
        CHECKPOINT.claim(tmp_path / "f", what="--checkpoint")
    assert (tmp_path / "f").read_text() == "mine"


@pytest.fixture()
def figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, _ = plt.subplots()
    yield fig
    plt.close(fig)


def test_a_plot_overwrites_only_a_plot_of_ours_and_creates_its_folder(tmp_path, figure):
    path = save_figure(figure, tmp_path / "new" / "p.png")
    assert PLOT.recognise(path)
    save_figure(figure, path)  # a rerun replaces its own plot
    users = tmp_path / "photo.png"
    users.write_bytes(b"\x89PNG\r\n\x1a\n not ours")
    with pytest.raises(NotOursError, match="--plot .*photo.png exists and sparkrm did not write it"):
        save_figure(figure, users, what="--plot")
    assert users.read_bytes() == b"\x89PNG\r\n\x1a\n not ours"
    (tmp_path / "dir.png").mkdir()
    with pytest.raises(NotOursError, match=r"dir.png is a folder: give the path of a PNG plot to write, e.g. "
                                           r".*dir.png/out.png"):
        PLOT.check_writable(tmp_path / "dir.png", what="--plot")
