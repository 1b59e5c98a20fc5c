"""A reduce task's wait for its shuffle's sealed plan, on a clock the test drives (no Spark, no wall time).

The reader asks the driver; while the plan is open it waits for the driver's pushed word of a seal and
asks again, without word at its recheck interval, and reads unmerged once its whole wait is over. Which
of these ends a wait is the script's choice here, never the machine's load.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_plugin.jar import pyspark_jars_dir
from tests.shuffle_merge.conftest import probe_jvm

PROBE = Path(__file__).resolve().parent / "java" / "PlanWaitProbe.java"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """``run(wait_ms, recheck_ms, answers, events)``: the trace of one wait (see PlanWaitProbe)."""
    logging = sorted(pyspark_jars_dir().glob("slf4j-api-*.jar"))
    with probe_jvm(PROBE, tmp_path_factory.mktemp("plan-wait"), *logging) as jvm:
        probe = jvm.dev.sparkrm.riffle.PlanWaitProbe
        yield lambda wait_ms, recheck_ms, answers, events="": probe.run(wait_ms, recheck_ms, answers, events)


def test_a_pushed_seal_ends_the_wait_at_once(run):
    # The clock never moves: the reader asked again because the driver's word came, not at its recheck.
    assert run(30_400, 5_000, "open,sealed", "seal") == "ask@0 wait:5000 seal ask@0 sealed"


def test_a_seal_pushed_between_the_answer_and_the_wait_is_not_missed(run):
    assert run(30_400, 5_000, "open+seal,sealed") == "ask@0 ask@0 sealed"


def test_without_word_the_reader_asks_again_at_each_recheck(run):
    assert (run(30_400, 5_000, "open,open,sealed", "timeout,timeout")
            == "ask@0 wait:5000 ask@5000 wait:5000 ask@10000 sealed")


def test_the_reader_reads_unmerged_once_its_whole_wait_is_over(run):
    # The last wait is cut to the deadline (7,000 ms after the first ask) plus one.
    assert (run(7_000, 5_000, "open,open,open", "timeout,timeout")
            == "ask@0 wait:5000 ask@5000 wait:2001 ask@7001 unmerged")


def test_a_sealed_plan_is_used_without_waiting(run):
    assert run(30_400, 5_000, "sealed") == "ask@0 sealed"
