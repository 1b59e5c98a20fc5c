"""Pad/slice planning for packed members with different batch sizes (Repack spec 3.2).

Every member of a pack reads from **one** shared batch per step. Member ``i``
takes a contiguous run of at most ``b_i`` rows of that batch (a *slice*), and
its training step sees exactly those rows. The planner decides which examples
go into the shared batch and which rows each member takes, while tracking every
member's data consumption separately, so that

* every member sees every example exactly once per epoch, and
* member ``i`` takes ``ceil(N / b_i)`` steps per epoch, all full except its last.

By default each member's batches are the consecutive runs of the epoch's order
that ``model.fit`` would give it (rows ``k*b_i .. (k+1)*b_i`` at its step
``k``); members whose next runs coincide share those rows, the others get
segments of their own in the shared batch. With ``share_rows=True`` the planner
follows Repack's scheme instead (thesis L364-L373), generalised: members are
served in descending batch size; a member takes the prefix of an existing
segment of the shared batch when all of those rows are still unused by it
(extending the segment at the tail with its own unused examples when it is
short), and opens a new segment from its own unused data otherwise. With members
that start an epoch together the unused sets stay nested, so they all share one
segment and the batch is ``max(b_i)`` rows: the thesis's three passes (100, 50,
80 on 10,000 examples give 100, 200 and 125 steps). Each member still sees every
example once per epoch, but not in ``model.fit``'s consecutive batches.

This module is pure Python and NumPy: it imports no TensorFlow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from spark_plugin.arguments import whole_number

#: The largest batch size a user sets (a tuner's default, a Rotary-DLT job's): a batch's memory grows with it.
MAX_BATCH_SIZE = 65_536
#: The most members of one pack, wherever a user sets a pack's size (the tuner's ``max_group`` and
#: ``group_size``, Rotary-DLT's ``max_pack``): the pack's traced step grows with each member.
MAX_PACK = 64


def batch_size_of(value, *, what: str) -> int:
    """A batch size as ``what`` gives it, once it is a whole number in [1, :data:`MAX_BATCH_SIZE`]."""
    return whole_number(value, what=what, low=1, high=MAX_BATCH_SIZE, fix="Pass e.g. 32.")

__all__ = ["MAX_BATCH_SIZE", "MAX_PACK", "BatchPlanner", "StepPlan", "Take", "batch_size_of", "steps_per_epoch"]


def steps_per_epoch(n_examples: int, batch_size: int) -> int:
    """Steps a member with ``batch_size`` takes for one epoch over ``n_examples``: ``ceil(N/b)``."""
    return math.ceil(n_examples / batch_size)


@dataclass(frozen=True)
class Take:
    """Rows ``[offset, offset + count)`` of the shared batch, taken by one member in one step."""

    offset: int
    count: int


@dataclass(frozen=True)
class StepPlan:
    """One packed step: the example indices of the shared batch and each member's slice.

    Attributes
    ----------
    indices : numpy.ndarray
        Example indices of the shared batch, in row order (before padding).
    takes : dict of str to Take
        The rows each active member trains on in this step.
    epoch_ends : tuple of str
        Members whose epoch ends with this step.
    finished : tuple of str
        Members whose whole budget of epochs ends with this step.
    """

    indices: np.ndarray
    takes: dict
    epoch_ends: tuple = ()
    finished: tuple = ()


@dataclass
class _Cursor:
    """One member's progress through its epochs."""

    batch_size: int
    epochs: int
    epoch: int
    order: np.ndarray
    used: np.ndarray
    remaining: int
    steps: list = field(default_factory=list)

    def unused(self, limit: int, skip=()) -> np.ndarray:
        """The first ``limit`` unused examples in epoch order, leaving out ``skip``."""
        candidates = self.order[~self.used[self.order]]
        if len(skip):
            candidates = candidates[~np.isin(candidates, skip)]
        return candidates[:limit]


class BatchPlanner:
    """Plan shared batches for members that may differ in batch size and progress.

    Parameters
    ----------
    n_examples : int
        Number of examples in one epoch of the shared dataset.
    shuffle : bool, default=False
        Draw a new order of the examples for every epoch. All members use the
        same order for the same epoch number, so members in step stay in step.
    seed : int, default=0
        Seed of the epoch orders when ``shuffle`` is true.
    record : bool, default=False
        Keep the index batches each member trained on in ``history_`` (for
        replaying a member alone, as the isolation tests do).
    share_rows : bool, default=False
        Repack's row sharing: shared batches of ``max(b_i)`` rows for members
        that start together, at the price of batches that are not consecutive
        runs of the epoch order.

    Attributes
    ----------
    history_ : dict of str to list of numpy.ndarray
        With ``record=True``, the example indices of each member's steps.

    Examples
    --------
    >>> planner = BatchPlanner(10_000, share_rows=True)
    >>> for name, b in [("m1", 100), ("m2", 50), ("m3", 80)]:
    ...     planner.add(name, b)
    >>> planner.run_to_end()
    {'m1': 100, 'm2': 200, 'm3': 125}
    """

    def __init__(self, n_examples: int, *, shuffle: bool = False, seed: int = 0, record: bool = False,
                 share_rows: bool = False):
        if not isinstance(n_examples, (int, np.integer)) or n_examples < 1:
            raise ValueError(f"n_examples must be an integer >= 1. Got {n_examples!r}. "
                             "Pass the number of rows of the training data.")
        self.n_examples = int(n_examples)
        self.shuffle = shuffle
        self.seed = seed
        self.record = record
        self.share_rows = share_rows
        self.history_: dict = {}
        self._cursors: dict = {}

    # -- membership -----------------------------------------------------------------------
    def add(self, name: str, batch_size: int, *, epochs: int = 1, start_epoch: int = 0) -> None:
        """Add member ``name`` at the start of epoch ``start_epoch`` with ``epochs`` epochs to go."""
        if name in self._cursors:
            raise ValueError(f"member name {name!r} is already in the plan. Give each member a unique name.")
        if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"batch_size of member {name!r} must be an integer >= 1. Got {batch_size!r}.")
        if epochs < 1:
            raise ValueError(f"epochs of member {name!r} must be >= 1. Got {epochs!r}.")
        cursor = _Cursor(int(batch_size), start_epoch + epochs, start_epoch, self.order(start_epoch),
                         np.zeros(self.n_examples, dtype=bool), self.n_examples)
        self._cursors[name] = cursor
        self.history_.setdefault(name, [])

    def remove(self, name: str) -> None:
        """Drop member ``name`` from the plan (it is freed)."""
        if name not in self._cursors:
            raise KeyError(f"member {name!r} is not in the plan; members are {sorted(self._cursors)}.")
        del self._cursors[name]

    @property
    def members(self) -> list:
        """Names of the members still planned, in the order they were added."""
        return list(self._cursors)

    def order(self, epoch: int) -> np.ndarray:
        """The order of the examples in ``epoch``: shared by every member."""
        if not self.shuffle:
            return np.arange(self.n_examples)
        return np.random.default_rng([self.seed, epoch]).permutation(self.n_examples)

    # -- planning -------------------------------------------------------------------------
    def next_step(self) -> StepPlan | None:
        """Plan the next shared batch, advance every member, and return the plan (None when done)."""
        if not self._cursors:
            return None
        batch: list = []
        segments: list = []  # [start, end) of each segment of the shared batch
        takes = {}
        for name, cur in sorted(self._cursors.items(), key=lambda kv: -kv[1].batch_size):
            want = min(cur.batch_size, cur.remaining)
            place = self._place if self.share_rows else self._place_consecutive
            takes[name] = place(cur, want, batch, segments)
        indices = np.asarray(batch, dtype=np.int64)
        epoch_ends, finished = [], []
        for name, take in takes.items():
            cur = self._cursors[name]
            rows = indices[take.offset:take.offset + take.count]
            cur.used[rows] = True
            cur.remaining -= take.count
            if self.record:
                self.history_[name].append(rows)
            if cur.remaining == 0:
                epoch_ends.append(name)
                cur.epoch += 1
                if cur.epoch >= cur.epochs:
                    finished.append(name)
                else:
                    cur.order, cur.remaining = self.order(cur.epoch), self.n_examples
                    cur.used[:] = False
        for name in finished:
            del self._cursors[name]
        return StepPlan(indices, takes, tuple(epoch_ends), tuple(finished))

    @staticmethod
    def _place_consecutive(cur: _Cursor, want: int, batch: list, segments: list) -> Take:
        """The member's next ``want`` rows of the epoch order: shared where a segment holds exactly them."""
        rows = [int(i) for i in cur.unused(want)]
        for start, end in segments:
            if batch[start:start + want] == rows:
                return Take(start, want)
        start = len(batch)
        batch.extend(rows)
        segments.append([start, len(batch)])
        return Take(start, want)

    @staticmethod
    def _place(cur: _Cursor, want: int, batch: list, segments: list) -> Take:
        """Find rows for a member: the prefix of a segment it has not used, or a new segment."""
        for seg in segments:
            start, end = seg
            have = batch[start:min(end, start + want)]
            if cur.used[have].any():
                continue
            short = want - len(have)
            if short == 0:
                return Take(start, want)
            if end != len(batch):
                continue  # a short segment can only grow at the tail of the batch
            extra = cur.unused(short, skip=np.asarray(have, dtype=np.int64))
            if len(extra) < short:
                continue
            batch.extend(int(i) for i in extra)
            seg[1] = len(batch)
            return Take(start, want)
        start = len(batch)
        batch.extend(int(i) for i in cur.unused(want))
        segments.append([start, len(batch)])
        return Take(start, want)

    def run_to_end(self) -> dict:
        """Plan until every member is done; return the number of steps each member took."""
        steps = {name: 0 for name in self._cursors}
        while (plan := self.next_step()) is not None:
            for name in plan.takes:
                steps[name] = steps.get(name, 0) + 1
        return steps

