"""Dynamic allocation with shuffle tracking releases executors that merged outputs: nothing stale is used.

Idle executors holding shuffle files leave once their shuffle's tracking times out; their map outputs are lost,
computed again on the next read and merged anew, and the merges of the old outputs are rejected.
"""

import pytest

from tests.helpers import eventually, executor_ids
from tests.shuffle_merge.elastic import PROMPT_REMOVAL, RIFFLE_CONF, read_twice

pytestmark = pytest.mark.spark

SPARK_SESSION = dict(
    master="local-cluster[2,1,1024]",
    features=["telemetry", "riffle"],
    conf={**RIFFLE_CONF, **PROMPT_REMOVAL, "spark.dynamicAllocation.enabled": "true",
          "spark.dynamicAllocation.shuffleTracking.enabled": "true",
          "spark.dynamicAllocation.shuffleTracking.timeout": "3s", "spark.dynamicAllocation.executorIdleTimeout": "1s",
          "spark.dynamicAllocation.initialExecutors": "2", "spark.dynamicAllocation.minExecutors": "0",
          "spark.dynamicAllocation.maxExecutors": "2"},
)


def test_executors_released_by_dynamic_allocation_leave_no_stale_merge_in_use(spark):
    def wait_until_released(tm, first):
        eventually(lambda: not executor_ids(spark), timeout=90)  # idle, and their shuffle's tracking timed out

    second = read_twice(spark, 83, wait_until_released)
    assert [t for t in second["task"].to_pylist() if t["taskType"] == "ShuffleMapTask"]  # lost, computed again
    merges = second["merge"].to_pylist()
    assert merges and all(m["status"] == "committed" for m in merges)  # merged anew
    assert all(r["fallbacks"] == 0 for r in second["shuffle_read"].to_pylist())
