"""SLAQ's bad inputs are one line naming them, before any Spark work, and its folders delete only what it wrote.

One ``local[1]`` session (no plugin), for the one test whose training data is cached on it.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from spark_plugin import slaq
from spark_plugin.errors import NotOursError, UsageError
from spark_plugin.slaq.__main__ import main
from spark_plugin.slaq.trainers import TrainingData

SPARK_SESSION = dict(master="local[1]", features=[])
NOTES = b"my notes\n"


def test_fit_with_a_job_name_where_the_job_goes_says_what_to_pass():
    with pytest.raises(UsageError, match=r"^slaq\.fit's job must be the TrainingJob SlaqScheduler\.job\(name\) "
                                         r"returns\. Got 'churn' \(str\)\. Pass the handle: .*slaq\.job\('churn'\) as "
                                         r"job: fit\(estimator, df, job\)\.$"):
        slaq.fit(object(), None, "churn")  # checked first: nothing of the other arguments is touched


def test_from_numpy_refuses_a_folder_of_the_users_and_unpersist_deletes_only_its_own(spark, tmp_path):
    x = np.arange(12.0).reshape(6, 2)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_bytes(NOTES)
    with pytest.raises(NotOursError, match=rf"^directory {mine} holds files sparkrm did not write \(notes\.txt\)"):
        TrainingData.from_numpy(spark.sparkContext, x, directory=mine)
    assert [p.name for p in mine.iterdir()] == ["notes.txt"] and (mine / "notes.txt").read_bytes() == NOTES

    blocks = tmp_path / "blocks"
    data = TrainingData.from_numpy(spark.sparkContext, x, partitions=2, directory=blocks)
    (blocks / "notes.txt").write_bytes(NOTES)  # the user's, put in sparkrm's folder
    with pytest.raises(NotOursError, match=rf"^{blocks} holds files sparkrm did not write \(notes\.txt\)"):
        data.unpersist()
    assert (blocks / "notes.txt").read_bytes() == NOTES
    (blocks / "notes.txt").unlink()
    data.unpersist()
    assert not blocks.exists()


@pytest.mark.parametrize("args, message", [
    (["--cores", "0"], r"--cores must be a whole number in \[1, 100000\]\. Got 0\."),
    (["--cores", "2", "--port", "70000"], r"--port must be a whole number in \[0, 65535\]\."),
    (["--cores", "2", "--epoch", "nan"], r"--epoch must be a finite number > 0 and <= 3600\. Got nan\. Pass seconds, e\.g\. 2\."),
])
def test_a_bad_coordinator_option_is_one_line_and_exit_status_2(args, message, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["coordinator", *args])
    out, err = capsys.readouterr()
    assert exited.value.code == 2 and out == "" and len(err.splitlines()) == 1
    assert re.match(rf"error: {message}.* \(see python -m spark_plugin\.slaq( coordinator)? --help\)$", err.strip())
