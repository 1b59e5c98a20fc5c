"""Small test utilities shared by several test modules."""

from __future__ import annotations

import time


def eventually(condition, timeout: float = 30.0, interval: float = 0.2):
    """Poll ``condition()`` until it returns a truthy value, and return that value.

    Raises
    ------
    AssertionError
        After ``timeout`` seconds, with the last value observed.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s; last value: {value!r}")
        time.sleep(interval)


def recorded(tm, action):
    """Run ``action`` and return its result with the telemetry records it produced (``tm``: the session's)."""
    mark = tm.mark()
    result = action()
    return result, tm.records(since=mark)


def executor_ids(spark) -> list[str]:
    """The ids of the application's registered executors, sorted."""
    ids = spark.sparkContext._jsc.sc().getExecutorIds().mkString(",")
    return sorted(ids.split(",")) if ids else []


def python_refusal(conf: dict) -> str | None:
    """The one line Python's key validator refuses ``conf`` with, or ``None``: what the JVM's must equal."""
    from spark_plugin.errors import ConfigError
    from spark_plugin.keys import KEYS

    try:
        KEYS.validate(conf)
    except ConfigError as e:
        return str(e)
    return None


class ManualClock:
    """A clock for code that takes one (``clock=``): it reads ``now`` and moves only when the test says.

    ``tick`` > 0 moves it that much after each reading, for code that must see time pass between two
    readings the test cannot reach (the start and end of a write).
    """

    def __init__(self, now: float = 0.0, tick: float = 0.0):
        self.now, self.tick = now, tick

    def __call__(self) -> float:
        now = self.now
        self.now += self.tick
        return now

    def advance(self, seconds: float) -> None:
        self.now += seconds
