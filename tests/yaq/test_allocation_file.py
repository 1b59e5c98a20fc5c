"""Pigeon's allocation file, read by Spark itself at start-up (``spark.scheduler.allocation.file``)."""

import tempfile
from pathlib import Path

import pytest

from spark_plugin.pigeon import LONG, SHORT, ShortJobPools
from spark_plugin.pigeon.__main__ import main

FILE = Path(tempfile.mkdtemp(prefix="pigeon-")) / "fairscheduler.xml"
FILE.write_text(ShortJobPools(40, weight=25).allocation_file())
SPARK_SESSION = dict(master="local[2]", features=[],
                     conf={"spark.scheduler.mode": "FAIR", "spark.scheduler.allocation.file": str(FILE)})


def test_spark_builds_both_pools_from_the_written_file_and_install_keeps_them(spark):
    sc = spark.sparkContext
    root = sc._jsc.sc().taskScheduler().rootPool()
    short, long_ = root.getSchedulableByName(SHORT), root.getSchedulableByName(LONG)
    assert (short.weight(), short.minShare(), long_.weight(), long_.minShare()) == (25, 2, 1, 0)
    assert str(short.schedulingMode()) == "FAIR"
    ShortJobPools(2).install(sc)  # the file's pools stay as Spark read them
    assert root.getSchedulableByName(SHORT).weight() == 25
    sc.setLocalProperty("spark.scheduler.pool", SHORT)
    assert sc.parallelize(range(100), 4).sum() == 4950
    sc.setLocalProperty("spark.scheduler.pool", None)


def test_the_command_prints_the_file_and_refuses_bad_arguments_in_one_line(capsys):
    assert main(["pools", "--cores", "40", "--weight", "25"]) == 0
    assert capsys.readouterr().out == FILE.read_text()
    with pytest.raises(SystemExit) as e:
        main(["pools", "--cores", "4", "--min-share", "2"])
    assert e.value.code == 2
    assert "min_share must be a fraction of the cores in [0, 1]. Got 2.0." in capsys.readouterr().err
