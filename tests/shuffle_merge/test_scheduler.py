"""Riffle's driver-side scheduler (Java), driven directly through py4j with explicit times.

The scheduler takes the current time as an argument, so these tests replay map-stage histories
exactly, and check its decisions against the rules and against the Python model.
"""

import json

import pytest
from hypothesis import given, settings, strategies as st

from shuffle_merge.merge_policy import MapOutput, MergePolicy, plan_merges

pytestmark = pytest.mark.spark

SPARK_SESSION = dict(master="local[1]", features=[])
MB = 1 << 20
R = 10  # reduce partitions of the simulated shuffle


class Scheduler:
    """A RiffleScheduler in the JVM, with replies turned into Python values.

    Every executor that writes an output has registered first (as executors do when they start) unless
    it registered explicitly; what the scheduler drains is kept per executor until :meth:`take` asks.
    """

    def __init__(self, jvm, policy="fanin", n=3, target=MB, max_fan_in=100, best_effort=1.0,
                 best_effort_timeout=10_000, max_wait_ratio=100.0, merge_timeout=60_000, leftovers=True,
                 per_host=True):
        self._jvm = jvm
        self._router = jvm.dev.sparkrm.rpc.MessageRouter
        self._defaults = self.settings(policy=policy, n=n, target=target, max_fan_in=max_fan_in,
                                       best_effort=best_effort, best_effort_timeout=best_effort_timeout,
                                       max_wait_ratio=max_wait_ratio, leftovers=leftovers, per_host=per_host)
        self._s = jvm.dev.sparkrm.riffle.RiffleScheduler(self._defaults, merge_timeout,
                                                         jvm.dev.sparkrm.riffle.RiffleEvents.NONE)
        self._joined, self._inbox = set(), {}

    def settings(self, enabled=True, policy="fanin", n=3, target=MB, max_fan_in=100, best_effort=1.0,
                 best_effort_timeout=10_000, max_wait_ratio=100.0, leftovers=True, per_host=True):
        """A ShuffleSettings record, as a job's local properties would produce."""
        jvm = self._jvm
        if policy == "fanin":
            java_policy = getattr(jvm, "dev.sparkrm.riffle.MergePolicy$FanIn")(n)
        else:
            java_policy = getattr(jvm, "dev.sparkrm.riffle.MergePolicy$BlockSize")(target, max_fan_in)
        return jvm.dev.sparkrm.riffle.ShuffleSettings(enabled, java_policy, float(best_effort),
                                                      best_effort_timeout, float(max_wait_ratio), leftovers, per_host)

    def register(self, shuffle=0, partitions=R, skip=None):
        self._s.registerShuffle(shuffle, partitions, skip)

    def stage(self, outputs, executor="a"):
        """Register shuffle 0, start its map stage, and report ``outputs`` map outputs of ``executor``."""
        self.register()
        self.submit(outputs)
        for i in range(outputs):
            self.output(i, executor=executor)

    # Default times make a 1 s map stage: submitted at 0, outputs at 500 ms, done at 1000 ms.

    def submit(self, tasks, t=0, shuffle=0, settings=None):
        self._s.mapStageSubmitted(shuffle, tasks, settings, t)

    def join(self, executor, dirs=None):
        """``executor`` registers, reporting ``dirs`` as its local directories (a host merge needs them)."""
        self._joined.add(executor)
        self._s.register(executor, None if dirs is None else self._jvm.java.util.ArrayList(dirs))

    def output(self, index, executor="a", size=MB, t=500, shuffle=0, host=None, registered=True):
        if registered and executor not in self._joined:
            self.join(executor)
        self._s.mapOutput(shuffle, index, 1000 + index, executor, host, size, t)

    def complete(self, t=1000, shuffle=0, ok=True):
        self._s.mapStageCompleted(shuffle, ok, t)

    def drain(self, t=1000):
        """Drains the scheduler at ``t``, keeping each executor's messages for :meth:`take`."""
        for executor, message in json.loads(self._router.toJson(self._s.drain(t))).items():
            kept = self._inbox.setdefault(executor, {"merges": [], "cancel": [], "sealed": []})
            for key in ("merges", "cancel", "sealed"):
                kept[key] += message.get(key, [])
            if "revocations" in message:
                kept["revocations"] = message["revocations"]

    def take(self, executor="a", t=1000):
        """What was pushed to ``executor`` up to ``t``: merges, cancel and sealed lists (and revocations)."""
        self.drain(t)
        return self._inbox.pop(executor, {"merges": [], "cancel": [], "sealed": []})

    def done(self, group, status="committed", t=1000, error=None):
        return self._s.mergeEnded(group, status, error, self._router.parse("{}"), t)

    def plan(self, shuffle=0, t=1000):
        return json.loads(self._router.toJson(self._s.plan(shuffle, t)))


@pytest.fixture(scope="module")
def jvm(spark):
    return spark.sparkContext._jvm


def indexes(merge):
    return [i for i, _ in merge["inputs"]]


def test_fanin_issues_one_merge_per_n_outputs_while_the_stage_runs(jvm):
    s = Scheduler(jvm, n=3)
    s.register()
    s.submit(7)
    for i in range(2):
        s.output(i)
    assert s.take()["merges"] == []
    s.output(2)
    first = s.take()
    assert [indexes(m) for m in first["merges"]] == [[0, 1, 2]] and first["sealed"] == []
    assert first["merges"][0]["syntheticMapId"] == (1 << 60) + first["merges"][0]["groupId"]
    for i in range(3, 7):
        s.output(i)
    assert [indexes(m) for m in s.take()["merges"]] == [[3, 4, 5]]
    assert s.take("b")["merges"] == []  # merges go to the executor holding the files


def test_the_plan_is_sealed_only_after_the_stage_and_its_merges(jvm):
    s = Scheduler(jvm, n=2)
    s.stage(4)
    groups = [m["groupId"] for m in s.take()["merges"]]
    assert len(groups) == 2
    assert s.done(groups[0]) is True
    assert not s.plan()["sealed"]  # stage still running
    s.complete(t=1000)
    assert not s.plan(t=1000)["sealed"]  # a merge is still running
    s.done(groups[1], t=1050)
    plan = s.plan(t=1050)
    assert plan["sealed"] and plan["riffle"] and sorted(g["groupId"] for g in plan["groups"]) == groups
    assert s.take()["sealed"] == [0] and s.take("b")["sealed"] == []  # told once, to registered executors


def test_failed_merges_leave_their_outputs_unmerged(jvm):
    s = Scheduler(jvm, n=2)
    s.stage(4)
    a, b = (m["groupId"] for m in s.take()["merges"])
    s.complete()
    assert s.done(a, "failed") is False
    s.done(b)
    plan = s.plan()
    assert plan["sealed"] and [g["groupId"] for g in plan["groups"]] == [b]


def test_best_effort_seals_at_the_fraction_and_cancels_the_rest(jvm):
    s = Scheduler(jvm, n=2, best_effort=0.8)
    s.stage(10)
    groups = [m["groupId"] for m in s.take()["merges"]]
    s.complete(t=1000)
    for g in groups[:3]:
        s.done(g, t=1010)
    assert not s.plan(t=1010)["sealed"]  # 6 of 10 merged
    s.done(groups[3], t=1020)  # 8 of 10: reached
    plan = s.plan(t=1020)
    assert plan["sealed"] and len(plan["groups"]) == 4
    assert s.take(t=1020)["cancel"] == [groups[4]]
    assert s.done(groups[4], t=1030) is False  # a late commit is discarded, never published


def test_best_effort_timeout_seals_without_the_fraction(jvm):
    s = Scheduler(jvm, n=2, best_effort=0.95, best_effort_timeout=1000)
    s.stage(4)
    groups = [m["groupId"] for m in s.take()["merges"]]
    s.complete(t=5000)
    assert not s.plan(t=5999)["sealed"]
    plan = s.plan(t=6000)
    assert plan["sealed"] and plan["groups"] == []
    assert sorted(s.take(t=6000)["cancel"]) == sorted(groups)


def test_a_merge_running_past_the_merge_timeout_fails(jvm):
    s = Scheduler(jvm, n=2, merge_timeout=500)
    s.register()
    s.submit(2)
    s.output(0, t=0)
    s.output(1, t=0)
    (merge,) = s.take(t=0)["merges"]  # issued at 0
    assert s.take(t=499)["cancel"] == []
    assert s.take(t=500)["cancel"] == [merge["groupId"]]
    assert s.done(merge["groupId"], t=600) is False


def test_leftovers_are_merged_at_stage_end(jvm):
    s = Scheduler(jvm, n=4)
    s.stage(6)
    s.complete()
    assert [indexes(m) for m in s.take()["merges"]] == [[0, 1, 2, 3], [4, 5]]


def test_blocksize_groups_outputs_until_their_average_blocks_reach_the_target(jvm):
    s = Scheduler(jvm, policy="blocksize", target=MB)
    s.register()
    s.submit(5)
    for i in range(3):
        s.output(i, size=4 * MB)  # 0.4 MB blocks
    s.output(3, size=30 * MB)  # 3 MB blocks: never merged
    assert [indexes(m) for m in s.take()["merges"]] == [[0, 1, 2]]


def test_a_resubmitted_map_stage_reopens_the_plan(jvm):
    s = Scheduler(jvm, n=2)
    s.register()
    s.submit(2)
    s.output(0)
    s.output(1)
    (merge,) = s.take()["merges"]
    s.done(merge["groupId"])
    s.complete()
    assert s.plan()["sealed"]
    s.submit(1, t=2000)  # an output was lost: the stage runs again
    plan = s.plan(t=2000)
    assert not plan["sealed"] and len(plan["groups"]) == 1  # readers validate old merges themselves


def test_a_job_can_override_the_policy_or_switch_merging_off(jvm):
    s = Scheduler(jvm, n=10)
    s.register()
    s.submit(4, settings=s.settings(n=2))
    for i in range(4):
        s.output(i)
    assert [indexes(m) for m in s.take()["merges"]] == [[0, 1], [2, 3]]
    s.register(shuffle=1)
    s.submit(4, shuffle=1, settings=s.settings(enabled=False))
    for i in range(4):
        s.output(i, shuffle=1)
    s.complete(shuffle=1)
    assert s.take()["merges"] == []
    assert s.plan(shuffle=1) == {"riffle": False, "sealed": True, "groups": []}


def test_a_short_map_stage_waits_only_its_share_of_the_deadline(jvm):
    s = Scheduler(jvm, n=2, best_effort_timeout=10_000, max_wait_ratio=0.5)
    s.register()
    s.submit(2, t=1000)
    s.output(0, t=1100)
    s.output(1, t=1200)
    s.take(t=1200)
    s.complete(t=1400)  # a 400 ms stage: reducers wait at most 200 ms
    assert not s.plan(t=1599)["sealed"]
    assert s.plan(t=1600)["sealed"]


def test_skipped_and_unknown_shuffles_read_as_vanilla(jvm):
    s = Scheduler(jvm)
    s.register(shuffle=1, skip="push-based shuffle")
    assert s.plan(shuffle=1) == {"riffle": False, "sealed": True, "groups": []}
    assert s.plan(shuffle=7) == {"riffle": False, "sealed": True, "groups": []}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 5 * MB)), min_size=1, max_size=40),
       st.sampled_from(["fanin", "blocksize"]), st.integers(2, 6), st.sampled_from([0.5, 0.9, 1.0]))
def test_the_jvm_forms_the_same_groups_as_the_python_model(jvm, spec, kind, n, best_effort):
    java = Scheduler(jvm, policy=kind, n=n, target=MB, max_fan_in=n + 2, best_effort=best_effort)
    java.register()
    java.submit(len(spec))
    for i, (executor, size) in enumerate(spec):
        java.output(i, executor=executor, size=size)
    java.complete()
    formed = sorted(indexes(m) for ex in "abc" for m in java.take(ex)["merges"])
    outs = [MapOutput(i, 1000 + i, ex, size, R) for i, (ex, size) in enumerate(spec)]
    model = plan_merges(outs, MergePolicy(kind, fan_in=n, target_block_bytes=MB, max_fan_in=n + 2),
                        best_effort=best_effort)
    assert formed == sorted([o.map_index for o in g] for g in model)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcd"), st.integers(1, 5 * MB)), min_size=1, max_size=40),
       st.integers(2, 6), st.booleans())
def test_host_queues_form_the_same_groups_as_the_python_model(jvm, spec, n, per_host):
    host_of = {"a": "h1", "b": "h1", "c": "h2", "d": "h2"}
    java = Scheduler(jvm, n=n, per_host=per_host)
    for ex in "abcd":
        java.join(ex, dirs=[f"/local/{ex}"])
    java.register()
    java.submit(len(spec))
    for i, (executor, size) in enumerate(spec):
        java.output(i, executor=executor, size=size, host=host_of[executor])
    java.complete()
    formed = sorted(indexes(m) for ex in "abcd" for m in java.take(ex)["merges"])
    outs = [MapOutput(i, 1000 + i, ex, size, R, host=host_of[ex]) for i, (ex, size) in enumerate(spec)]
    model = plan_merges(outs, MergePolicy("fanin", fan_in=n, scope="host" if per_host else "executor"))
    assert formed == sorted([o.map_index for o in g] for g in model)


def test_a_host_merge_runs_on_one_of_its_writers_and_reads_the_neighbours_directories(jvm):
    s = Scheduler(jvm, n=4)
    s.join("a", dirs=["/local/a"])
    s.join("b", dirs=["/local/b"])
    s.register()
    s.submit(8)
    for i in range(8):
        s.output(i, executor="ab"[i % 2], host="h1")
    (first,) = s.take("a")["merges"]
    (second,) = s.take("b")["merges"]  # a already merges one: the next goes to b
    assert indexes(first) == [0, 1, 2, 3] and indexes(second) == [4, 5, 6, 7]
    assert first["merger"] == "a" and second["merger"] == "b"
    assert first["inputDirs"] == [[], ["/local/b"], [], ["/local/b"]]
    assert second["inputDirs"] == [["/local/a"], [], ["/local/a"], []]
    s.done(first["groupId"])
    s.done(second["groupId"])
    s.complete()
    plan = s.plan()
    assert plan["sealed"] and {g["merger"] for g in plan["groups"]} == {"a", "b"}
    assert all("inputDirs" not in g for g in plan["groups"])  # readers need no directories


def test_an_executor_that_reported_no_directories_merges_alone(jvm):
    s = Scheduler(jvm, n=3)
    s.join("a", dirs=["/local/a"])
    s.join("b")  # reported no directories
    s.register()
    s.submit(6)
    for i in range(6):
        s.output(i, executor="ab"[i % 2], host="h1")
    assert [indexes(m) for m in s.take("a")["merges"]] == [[0, 2, 4]]  # h1's queue holds a's outputs only
    assert [indexes(m) for m in s.take("b")["merges"]] == [[1, 3, 5]]


def test_an_executor_that_never_registered_leaves_its_outputs_unmerged(jvm):
    s = Scheduler(jvm, n=2)
    s.register()
    s.submit(4)
    for i in range(4):
        s.output(i, executor="ab"[i % 2], registered=i % 2 == 0)  # b could not be handed a merge
    s.complete()
    assert [indexes(m) for m in s.take("a")["merges"]] == [[0, 2]]
    assert s.take("b")["merges"] == []


def test_revocations_and_seals_reach_every_registered_executor_once_and_the_removed_none(jvm):
    s = Scheduler(jvm, n=2)
    for ex in "abc":
        s.join(ex)
    s.stage(2)
    (merge,) = s.take("a")["merges"]
    s.done(merge["groupId"])
    s._s.executorRemoved("c")
    s.complete()
    assert s._s.revoke(merge["groupId"], "corrupt")
    told = {ex: s.take(ex) for ex in "abc"}
    assert told["a"]["sealed"] == told["b"]["sealed"] == [0] and told["c"]["sealed"] == []
    assert told["a"]["revocations"] == told["b"]["revocations"] == 1 and "revocations" not in told["c"]
    assert s.take("a", t=2000) == {"merges": [], "cancel": [], "sealed": []}  # nothing new


def test_the_next_deadline_is_the_earliest_merge_timeout_or_seal_deadline(jvm):
    s = Scheduler(jvm, n=2, merge_timeout=5000, best_effort_timeout=1000, max_wait_ratio=100.0)
    never = jvm.java.lang.Long.MAX_VALUE
    assert s._s.nextDeadline() == never
    s.register()
    s.submit(3, t=0)
    s.output(0, t=100)
    s.output(1, t=200)  # a merge issued at 200: times out at 5200
    assert s._s.nextDeadline() == 5200
    s.complete(t=300)  # the leftover is not merged (one output); sealing waits for the merge until 1300
    assert s._s.nextDeadline() == 1300
    s.take(t=1300)
    assert s.plan(t=1300)["sealed"] and s._s.nextDeadline() == never


def test_the_end_of_a_map_stage_wakes_the_drainer_so_it_keeps_the_seal_deadline(jvm):
    """The driver's pusher sets its timer to the next deadline whenever it drains, and drains when woken. A map
    stage that ends with no leftover to merge issues nothing, yet its seal deadline is new: it must wake the
    pusher, or the seal waits for a reader's next ask (a reader then waited 5 s for a 400 ms deadline in CI)."""
    s = Scheduler(jvm, n=2, merge_timeout=60_000, best_effort_timeout=400)
    s.register()
    s.submit(3, t=0)
    s.output(0, t=100)
    s.output(1, t=200)
    s.take(t=200)  # the pusher drained: its timer is at the merge's timeout, 60,200
    woken = jvm.java.util.concurrent.FutureTask(jvm.java.lang.Thread(), None)  # done once run
    s._s.onWork(woken)
    s.complete(t=300)  # one output left over: nothing to merge
    assert woken.isDone() and s._s.nextDeadline() == 700
    assert s.take(t=700)["sealed"] == [0]


def test_executor_scope_keeps_each_executor_apart(jvm):
    s = Scheduler(jvm, n=2, per_host=False)
    s.join("a", dirs=["/local/a"])
    s.join("b", dirs=["/local/b"])
    s.stage(0)
    for i in range(4):
        s.output(i, executor="ab"[i % 2], host="h1")
    assert [indexes(m) for m in s.take("a")["merges"]] == [[0, 2]]
    assert [indexes(m) for m in s.take("b")["merges"]] == [[1, 3]]


def test_a_host_whose_executors_cannot_read_each_other_merges_per_executor(jvm):
    s = Scheduler(jvm, n=2)
    s.join("a", dirs=["/local/a"])
    s.join("b", dirs=["/local/b"])
    s.register()
    s.submit(6)
    s.output(0, executor="a", host="h1")
    s.output(1, executor="b", host="h1")
    (host_merge,) = s.take("a")["merges"]
    assert s.done(host_merge["groupId"], "unreadable", error="cannot read /local/b") is False
    for i in range(2, 6):
        s.output(i, executor="ab"[i % 2], host="h1")
    s.complete()
    # The failed merge's outputs were queued again with their own executors, and so were the later ones.
    assert [indexes(m) for m in s.take("a")["merges"]] == [[0, 2]]
    assert [indexes(m) for m in s.take("b")["merges"]] == [[1, 3]]


@pytest.mark.parametrize("conf, policy", [
    ({}, "BlockSize[targetBytes=2097152, maxFanIn=100]"),  # the default
    ({"spark.riffle.merge.fanIn": "20"}, "FanIn[n=20]"),  # N given: N-way, not silently ignored
    ({"spark.riffle.merge.fanIn": "20", "spark.riffle.merge.policy": "blocksize"},
     "BlockSize[targetBytes=2097152, maxFanIn=100]"),  # an explicit policy wins
    ({"spark.riffle.merge.policy": "fanin"}, "FanIn[n=10]"),
])
def test_the_default_policy_is_blocksize_unless_a_fan_in_is_given(jvm, conf, policy):
    sparkrm_conf = jvm.dev.sparkrm.conf.SparkrmConf.validate(jvm.java.util.HashMap(conf))
    assert str(jvm.dev.sparkrm.riffle.MergePolicy.fromConf(sparkrm_conf)) == policy
