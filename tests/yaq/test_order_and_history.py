"""Yaq's ordering, its wait estimator, the job history and Pigeon's routing: pure, no Spark."""

import json

import pytest

from spark_plugin.errors import NotOursError, UsageError
from spark_plugin.job_history import HistoryFileError, JobHistory, Work, sql_shape
from spark_plugin.pigeon import LONG, SHORT, ShortJobPools
from spark_plugin.yaq import Waiting, queue_wait, release_order, starved


def names(jobs):
    return [j.name for j in jobs]


def test_srjf_releases_the_least_work_first_and_fifo_by_arrival():
    jobs = [Waiting("long", 0.0, 30.0, 400), Waiting("mid", 1.0, 5.0, 900), Waiting("short", 2.0, 0.5, 8)]
    assert names(release_order(jobs, 3.0)) == ["short", "mid", "long"]
    assert names(release_order(jobs, 3.0, policy="lrtf")) == ["short", "long", "mid"]
    assert names(release_order(jobs, 3.0, policy="fifo")) == ["long", "mid", "short"]


def test_a_job_starves_past_the_hard_or_the_relative_threshold_and_then_goes_first():
    long, short = Waiting("long", 0.0, 30.0, 400), Waiting("short", 10.0, 0.5, 8)
    assert not starved(long, 59.0, hard_s=60.0, ratio=4.0) and starved(long, 60.5, hard_s=60.0, ratio=4.0)
    assert starved(short, 12.5, hard_s=60.0, ratio=4.0)  # waited 2.5 s > 4 x 0.5 s
    assert names(release_order([long, short], 30.0)) == ["short", "long"]
    assert names(release_order([short, long], 61.0)) == ["long", "short"]  # both starved: earlier arrival
    unknown = Waiting("new", 0.0)  # no estimate: shortest, and only the hard threshold applies
    assert names(release_order([long, unknown], 1.0)) == ["new", "long"]
    assert not starved(unknown, 59.0, hard_s=60.0, ratio=4.0)


def test_an_unknown_policy_is_refused_with_the_choices():
    with pytest.raises(ValueError, match=r"policy must be one of \['srjf', 'lrtf', 'fifo'\]. Got 'sjf'"):
        release_order([], 0.0, policy="sjf")


def test_queue_wait_plays_the_slots_forward():
    assert queue_wait([4.0, 1.0]) == 1.0  # nothing queued: the first slot to free
    assert queue_wait([4.0, 1.0], [2.0, 2.0]) == 4.0  # 1 -> 3 (first), 3 -> 5 (second); then 4 frees
    assert queue_wait([4.0, 1.0], [2.0], free_slots=1) == 0.0
    assert queue_wait([]) == 0.0


def test_history_is_a_weighted_mean_per_shape_that_survives_a_save(tmp_path):
    h = JobHistory(smoothing=0.5).record("q6", task_s=4.0, tasks=8).record("q6", task_s=2.0, tasks=4)
    assert h.estimate("q6") == Work(3.0, 6.0, 2) and h.estimate("q1") is None
    assert Work(8.0, 4.0, 1).length_s(4) == 2.0
    back = JobHistory.load(h.save(tmp_path / "h.json"))
    assert back.estimate("q6") == h.estimate("q6") and back.smoothing == 0.5
    assert len(JobHistory.load(tmp_path / "missing.json")) == 0


def test_a_broken_history_file_is_refused_in_one_line_naming_it(tmp_path):
    bad = tmp_path / "h.json"
    for text in ("{not json", json.dumps({"shapes": {}}), json.dumps({"smoothing": 0.3, "shapes": {"q": {}}})):
        bad.write_text(text)
        with pytest.raises(HistoryFileError, match=f"^{bad}: not a job history .*Choose another path") as e:
            JobHistory.load(bad)
        assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="task_s and tasks must be >= 0"):
        JobHistory().record("q", task_s=-1.0, tasks=1)


def test_a_history_overwrites_only_a_history_and_creates_its_folder(tmp_path):
    mine = tmp_path / "notes.json"
    mine.write_text('{"my": "notes"}')
    with pytest.raises(NotOursError, match=f"^--history {mine} exists and sparkrm did not write it"):
        JobHistory.open(mine, what="--history")
    with pytest.raises(NotOursError, match=f"^{mine} exists and sparkrm did not write it"):
        JobHistory().record("q", task_s=1.0, tasks=1).save(mine)
    assert mine.read_text() == '{"my": "notes"}'
    with pytest.raises(NotOursError, match=f"^{tmp_path} is a folder: give the path of a job history"):
        JobHistory.open(tmp_path)
    kept = tmp_path / "new" / "history.json"
    assert len(JobHistory.open(kept)) == 0 and kept.parent.is_dir()
    JobHistory().record("q", task_s=1.0, tasks=1).save(kept)
    JobHistory.open(kept).record("q", task_s=3.0, tasks=1).save(kept)  # its own file: replaced
    assert JobHistory.load(kept).estimate("q").runs == 2 and sorted(p.name for p in kept.parent.iterdir()) == [
        "history.json"]


def test_sql_shape_ignores_literals_case_and_spacing_but_not_structure():
    a = sql_shape("SELECT sum(x) FROM t WHERE d < DATE '1994-01-01' AND q < 24")
    assert a == sql_shape("select sum(x)\n  from t where d < date '1995-06-01' and q < 10.5")
    assert a != sql_shape("SELECT sum(x) FROM t WHERE d > DATE '1994-01-01' AND q < 24")
    assert a.startswith("sql-")


def test_pigeon_routes_by_predicted_length_and_sizes_its_reserved_share():
    pools = ShortJobPools(40, max_length_s=10.0)
    assert pools.short_min_share == 2 and ShortJobPools(2).short_min_share == 1
    assert pools.pool_for(None) == SHORT  # never seen: short once, then measured
    assert pools.pool_for(Work(400.0, 80, 3)) == SHORT  # 10 s on 40 cores
    assert pools.pool_for(Work(401.0, 80, 3)) == LONG
    xml = pools.allocation_file()
    assert '<pool name="pigeon-short">' in xml and "<weight>20</weight>" in xml and "<minShare>2</minShare>" in xml



@pytest.mark.parametrize("bad, message", [
    ({"weight": 5000}, r"^ShortJobPools' weight must be an integer in \[1, 1000\] \(as spark.pigeon.short.weight\). "
                       r"Got 5000. Pass e.g. 20.$"),
    ({"weight": 2.5}, r"^ShortJobPools' weight must be an integer .* Got 2.5."),
    ({"min_share": 1.5}, r"^ShortJobPools' min_share must be a number in \[0, 1\] \(as spark.pigeon.short.minShare\)"),
    ({"max_length_s": 0}, r"^ShortJobPools' max_length_s \(0 s\) must be a duration >= 1ms "
                          r"\(as spark.pigeon.short.maxLength\)"),
    ({"max_length_s": "10s"}, r"^ShortJobPools' max_length_s must be a finite number. Got '10s'."),
    ({"cores": 0}, r"^ShortJobPools' cores must be a whole number in \[1, 10000000\]. Got 0."),
])
def test_pigeon_checks_each_argument_by_its_keys_rule(bad, message):
    with pytest.raises(UsageError, match=message):
        ShortJobPools(**{"cores": 4, **bad})
