"""The SLAQ scheduler's time: grants, iterations and reports on a clock the test moves (no Spark).

The epoch loop waits ``epoch_s`` between decisions; what a decision accounts (core seconds, the
timeline, an iteration's wall time) reads the clock the scheduler was given, so these tests call
:meth:`SlaqScheduler.reallocate` at times they set.
"""

import pytest

from spark_plugin.slaq.estimators import OBJECTIVES, _Relay
from spark_plugin.slaq.scheduler import IterationClock, SlaqScheduler
from tests.helpers import ManualClock


def test_grants_are_accounted_on_the_schedulers_clock():
    clock = ManualClock(100.0)
    slaq = SlaqScheduler(None, cores=2, policy="fair", clock=clock)
    a, b = slaq.job("a"), slaq.job("b")
    assert sorted(slaq.reallocate().values()) == [1, 1]
    clock.advance(3.0)
    slaq.reallocate()
    assert a.core_seconds == b.core_seconds == 3.0
    clock.advance(0.5)
    a.finish()
    assert a.core_seconds == 3.5 and a.cores == 0
    clock.advance(1.0)
    assert slaq.reallocate() == {"b": 2}
    assert [r.time_s for r in slaq.timeline] == [0.0, 3.0, 4.5]
    assert b.arrival_s == 0.0 and b.core_seconds == 4.5


def test_an_iteration_is_timed_from_its_first_core_request_on_its_fewest_cores():
    clock = ManualClock(7.0)
    iteration = IterationClock(clock)
    iteration.started(2)
    clock.advance(2.0)
    iteration.started(1)  # a second Spark job of the same iteration (a line search), on fewer cores
    clock.advance(1.0)
    assert iteration.stopped() == (3.0, 1)
    assert iteration.stopped() == (None, None)  # nothing in flight


def test_a_report_is_stamped_with_the_schedulers_time():
    clock = ManualClock(50.0)
    slaq = SlaqScheduler(None, cores=2, policy="fair", clock=clock)
    job = slaq.job("a")
    slaq.reallocate()
    assert job.wait_for_cores() == 2
    clock.advance(2.5)
    job.report(0, 1.0, cpu_time_s=4.0)
    assert list(job.history.times_) == [2.5] and list(job.history.cpu_times_) == [4.0]


class _Feed:
    """The JVM objective feed's calls, for a relay with no JVM: lines are (value, stamp ms, cores) triples."""

    def __init__(self):
        self.lines, self.holds, self.routes = [], [], []

    def drain(self, name):
        out, self.lines = self.lines, []
        return out

    def hold(self, name, hold):
        self.holds.append(hold)

    def route(self, name, pool, group, description, cores):
        self.routes.append((name, pool, group, cores))


def test_an_mllib_iteration_takes_the_time_between_its_objectives_less_the_time_held():
    clock = ManualClock(1_000.0)  # ms, the feed's stamps
    job = SlaqScheduler(None, cores=2, policy="fair").job("lr")
    feed = _Feed()
    relay = _Relay(feed, job, OBJECTIVES["LogisticRegression"], cores=2, enforce="share", poll_s=60.0, clock_ms=clock)
    clock.advance(500.0)
    relay._hold(True)
    relay._hold(True)  # no change: the JVM is not told again
    clock.advance(300.0)
    relay._hold(False)
    feed.lines += [0.7, 2_000.0, 2, 0.5, 2_400.0, 1]
    relay._drain()
    assert feed.holds == [True, False]
    # 1,000 ms since the relay started less 300 held, then 400 ms; times the cores each iteration ran on.
    assert list(job.history.losses_) == [0.7, 0.5]
    assert list(job.history.cpu_times_) == pytest.approx([1.4, 0.4])


@pytest.mark.parametrize("enforce", ["share", "width"])
def test_a_running_fit_follows_its_grant_rerouted_or_held(enforce):
    """"share" moves the fit to its new grant's group (and pool) and holds it only at no cores; "width"
    cannot widen or narrow a running fit, so it holds it whenever the grant is below its width."""
    clock = ManualClock(0.0)
    slaq = SlaqScheduler(None, cores=2, policy="fair", clock=clock)
    job = slaq.job("lr")
    slaq.reallocate()
    feed = _Feed()
    relay = _Relay(feed, job, OBJECTIVES["LogisticRegression"], cores=job.wait_for_cores(), enforce=enforce,
                   poll_s=60.0)
    relay._follow()
    assert feed.routes == [] and feed.holds == []  # the grant it started on
    clock.advance(5.0)
    slaq.job("b")
    slaq.reallocate()  # two jobs: one core each
    relay._follow()
    if enforce == "share":
        assert feed.routes == [("lr", None, "slaq-lr-1-c1", 1)] and feed.holds == [] and relay.cores == 1
    else:
        assert feed.routes == [] and feed.holds == [True] and relay.cores == 2
    clock.advance(5.0)  # lr has had the most core-seconds: the fair share's rotation leaves it out
    slaq.job("c")
    slaq.reallocate()
    assert job.cores == 0
    relay._follow()
    assert feed.holds == [True]
    slaq.jobs["c"].finish()
    slaq.reallocate()
    relay._follow()
    assert feed.holds == [True, False] if enforce == "share" else feed.holds == [True]
