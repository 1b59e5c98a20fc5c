"""The thesis's I/O request model of Riffle (spec §3.10), for prediction against measurement.

With M map tasks, R reducers, T shuffle bytes and merge buffers of s bytes:

* vanilla sort shuffle issues ``M·R`` block reads;
* complete N-way merging issues ``(M/N)·R`` reads, plus ``2·T/s`` sequential
  requests for the merge itself (read once, write once, in buffer-sized chunks);
* best-effort with fraction f leaves ``(1-f)·M`` outputs unmerged, so each
  reducer reads about ``(1-f)·M + f·M/N`` blocks.

Merging happens per host (or per executor with ``merge.scope=executor``), so
with M_h outputs on host h a reducer reads ``sum_h ceil(M_h / N)`` merged
blocks (M_e per executor e in the executor scope).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class RequestModel:
    """Predicted shuffle read requests for one shuffle.

    Parameters
    ----------
    maps : int
        M, map tasks.
    reducers : int
        R, reduce partitions.
    shuffle_bytes : float, default=0
        T, bytes written by the map stage (for the merge I/O term).
    """

    maps: int
    reducers: int
    shuffle_bytes: float = 0.0

    def vanilla_reads(self) -> int:
        """M·R block reads."""
        return self.maps * self.reducers

    def merged_reads(self, fan_in: int) -> float:
        """(M/N)·R block reads after complete N-way merging."""
        return self.maps / fan_in * self.reducers

    def merge_io_requests(self, buffer_bytes: float) -> float:
        """2·T/s: the merge's extra sequential reads and writes."""
        return 2 * self.shuffle_bytes / buffer_bytes

    def total_requests(self, fan_in: int, buffer_bytes: float) -> float:
        """(M/N)·R + 2·T/s, the thesis's total for complete merging."""
        return self.merged_reads(fan_in) + self.merge_io_requests(buffer_bytes)

    def best_effort_reads_per_reducer(self, fan_in: int, fraction: float) -> float:
        """(1-f)·M + f·M/N blocks per reducer when a fraction f of outputs is merged."""
        return (1 - fraction) * self.maps + fraction * self.maps / fan_in


def reads_per_reducer(maps_per_merger: list[int], fan_in: int) -> int:
    """Blocks per reducer after complete N-way merging on each host (or executor): sum of ceil(M_h/N)."""
    return sum(math.ceil(m / fan_in) for m in maps_per_merger)
