"""The standalone cluster Wrangler's benchmark runs on (``spark_plugin.standalone``) deletes only its own folder.

Its folder of logs and work directories is marked as sparkrm's when made, and :meth:`stop` removes it only
while it holds nothing else; a folder the caller gives must be missing, empty or already sparkrm's.
"""

import logging

import pytest

from spark_plugin.errors import NotOursError
from spark_plugin.ownership import MARKER
from spark_plugin.standalone import STANDALONE_FOLDER, StandaloneCluster


def test_a_given_folder_of_the_users_is_refused_before_anything_starts(tmp_path):
    (tmp_path / "master.log").write_text("my notes")
    with pytest.raises(NotOursError, match=f"^StandaloneCluster's directory {tmp_path} holds no .sparkrm-owner "
                                           "marker, so sparkrm cannot tell it wrote it"):
        StandaloneCluster(directory=tmp_path)
    assert (tmp_path / "master.log").read_text() == "my notes"
    StandaloneCluster(directory=tmp_path / "new")  # missing: claimed when the cluster starts


@pytest.mark.spark
def test_stop_removes_its_own_folder_only_while_it_holds_nothing_else(caplog):
    cluster = StandaloneCluster(workers=1, cores=1, memory="512m").start()
    folder = cluster._dir
    try:
        assert (folder / MARKER).is_file() and (folder / "master.log").is_file()
        (folder / "thesis.tex").write_text("saved here by mistake")
    finally:
        with caplog.at_level(logging.WARNING, logger="spark_plugin.standalone"):
            cluster.stop()
    assert (folder / "thesis.tex").read_text() == "saved here by mistake"
    assert "holds files sparkrm did not write (thesis.tex)" in caplog.text
    (folder / "thesis.tex").unlink()
    STANDALONE_FOLDER.remove(folder)  # the rest was its own
    assert not folder.exists()
