"""The harness's ``rotary`` mode: each query answered progressively through Rotary-AQP's automatic path.

The worker hands every query's plain SQL (the harness's own query files, as any user would write them) to
:func:`spark_plugin.rotary.progressive_query`, which derives its progressive form from Spark's analysis of
it and runs it batch by batch over the layouts prepared when the worker started (splitting tables into
batches is a one-off preparation, as generating the data is, not part of any query's latency). The mode
reports when the first estimate arrived, when the estimate first reached 95% true accuracy (against the
exact answer of the first run, whose last batch gives it) and when the exact final answer arrived, and the
true accuracy after a quarter of the batches; the final answer is what the runner validates against DuckDB.
A query the rewriter cannot answer progressively runs exactly in one step, as in ``vanilla``, and its
reason goes to the worker's log.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np

#: True accuracy at which a progressive answer counts as good enough.
TARGET_ACCURACY = 0.95

LOG = logging.getLogger(__name__)


class ProgressiveAnswers:
    """Progressive runs of the harness's queries, in one worker's Spark application."""

    def __init__(self, spark, dataset, queries: list[str], batches: int = 20):
        """Prepare the layouts ``queries`` (SQL texts over the data set's temporary views) read, in a folder
        beside the data set (``<dataset>.layouts``), reused by later runs while the data is unchanged."""
        from spark_plugin.rotary.layouts import prepare_for

        self.spark, self.batches = spark, batches
        self.layouts = Path(f"{dataset}.layouts")
        prepare_for(spark, queries, batches, root=self.layouts)
        self._exact: dict[int, object] = {}

    def answer(self, query: int, sql: str) -> tuple[list[str], list[tuple], dict]:
        """Run ``sql`` (query ``query``) progressively: its final result's columns and rows, and the times
        (seconds from the start) of its first estimate, of its first estimate at 95% true accuracy and of its
        final answer; no times for a query run exactly."""
        from spark_plugin import rotary
        from spark_plugin.rotary.accuracy import true_accuracy
        from spark_plugin.rotary.sqlquery import ExactQuery

        start = time.perf_counter()
        job = rotary.progressive_query(self.spark, sql, self.batches, layouts=self.layouts)
        arrivals = [(time.perf_counter() - start, snap.result) for snap in job]  # accuracy is scored after
        final = arrivals[-1][1]
        rows = [tuple(v.item() if isinstance(v, np.generic) else v for v in row)
                for row in final.itertuples(index=False, name=None)]
        if isinstance(job, ExactQuery):
            LOG.info("Q%d ran exactly: %s", query, job.reason)
            return list(final.columns), rows, {}
        exact = self._exact.setdefault(query, final)  # the first run's last batch: the exact answer
        accuracies = [true_accuracy(result, exact, job.spec) for _, result in arrivals]
        accurate = next((t for (t, _), a in zip(arrivals, accuracies) if a >= TARGET_ACCURACY), None)
        return list(final.columns), rows, {"progressive": {
            "first_s": arrivals[0][0], "accuracy95_s": accurate, "final_s": arrivals[-1][0], "batches": job.batches,
            "quarter_accuracy": accuracies[max(1, job.batches // 4) - 1]}}
