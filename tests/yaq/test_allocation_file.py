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


def test_the_command_prints_the_file(capsys):
    assert main(["pools", "--cores", "40", "--weight", "25"]) == 0
    assert capsys.readouterr().out == FILE.read_text()


@pytest.mark.parametrize("argv, message", [
    (["--cores", "4", "--weight", "5000"],
     "--weight must be an integer in [1, 1000] (as spark.pigeon.short.weight). Got '5000'. Pass e.g. 20."),
    (["--cores", "4", "--min-share", "2"],
     "--min-share must be a number in [0, 1] (as spark.pigeon.short.minShare). Got '2'. Pass e.g. 0.05."),
    (["--cores", "0"], "--cores must be a whole number in [1, 10000000]. Got 0."),
    (["--cores", "many"], "--cores must be a whole number in [1, 10000000]. Got 'many'."),
])
def test_the_command_refuses_each_bad_option_by_its_keys_rule_in_one_line(capsys, argv, message):
    with pytest.raises(SystemExit) as e:
        main(["pools", *argv])
    assert e.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: ") and err.count("\n") == 1 and message in err
