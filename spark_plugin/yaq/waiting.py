"""How long new work would wait for a slot: Yaq's queue-wait estimator (Algorithm 2).

Given the time left of every running task and the estimated durations of the tasks queued ahead,
it plays the slots forward: each queued task takes the slot that frees first. The new work waits
until the slot after the last queued task frees. With a free slot, nothing waits. Wrangler can ask
it whether work it would hold back from a slow executor waits less elsewhere than the straggler it
avoids. Pure Python.
"""

from __future__ import annotations

import heapq


def queue_wait(running_left_s, queued_s=(), *, free_slots: int = 0) -> float:
    """Seconds a task arriving now waits before it starts.

    Parameters
    ----------
    running_left_s : iterable of float
        Seconds each running task still needs (one per busy slot).
    queued_s : iterable of float
        Estimated durations of the tasks queued ahead of it, in the order they will start.
    free_slots : int
        Idle slots now; any means no wait.

    >>> queue_wait([4.0, 1.0], [2.0])      # the 1 s slot takes the queued task (ends at 3), then 4 s frees
    3.0
    >>> queue_wait([4.0, 1.0], [2.0], free_slots=1)
    0.0
    """
    if free_slots > 0:
        return 0.0
    slots = sorted(max(float(t), 0.0) for t in running_left_s)
    if not slots:
        return 0.0
    for duration in queued_s:
        heapq.heappush(slots, heapq.heappop(slots) + max(float(duration), 0.0))
    return slots[0]
