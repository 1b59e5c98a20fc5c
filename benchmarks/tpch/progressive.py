"""The harness's ``rotary`` mode: each query answered progressively, as Rotary-AQP's online aggregation.

A query with a progressive spec (:func:`spark_plugin.rotary.available`) runs batch by batch over the
batched copy of the data set; the mode reports when the first estimate arrived, when the estimate
first reached 95% true accuracy (against the exact answer of the first run, whose last batch gives
it) and when the exact final answer arrived, and the true accuracy after a quarter of the batches (the
latency goal for a 95% answer applies where a quarter of the data gives one); the final answer is what the
runner validates against DuckDB. Other queries run as plain SQL, as in ``vanilla``.
"""

from __future__ import annotations

import time

import numpy as np

#: True accuracy at which a progressive answer counts as good enough.
TARGET_ACCURACY = 0.95


class ProgressiveAnswers:
    """Progressive runs of the queries Rotary supports, in one worker's Spark application."""

    def __init__(self, spark, dataset, batches: int = 20):
        from spark_plugin import rotary

        from spark_plugin.rotary.spec import LAYOUTS

        self.spark = spark
        # Every batched layout is made here, before the runner times anything: splitting the data into batches
        # is a one-off preparation (as generating it is), not part of any query's latency.
        self.data = rotary.prepare(spark, dataset, batches, layouts=tuple(LAYOUTS))
        self.supported = set(rotary.available())
        self._exact: dict[int, object] = {}

    def supports(self, query: int) -> bool:
        return query in self.supported

    def answer(self, query: int) -> tuple[list[str], list[tuple], dict]:
        """Run ``query`` progressively: its final result's columns and rows, and the times (seconds from the
        start) of its first estimate, of its first estimate at 95% true accuracy and of its final answer."""
        from spark_plugin import rotary
        from spark_plugin.rotary.accuracy import true_accuracy

        start = time.perf_counter()
        job = rotary.ProgressiveQuery(self.spark, query, self.data.data, self.data.batches, self.data.seed)
        arrivals = [(time.perf_counter() - start, snap.result) for snap in job]  # accuracy is scored after
        final = arrivals[-1][1]
        exact = self._exact.setdefault(query, final)  # the first run's last batch: the exact answer
        accuracies = [true_accuracy(result, exact, job.spec) for _, result in arrivals]
        accurate = next((t for (t, _), a in zip(arrivals, accuracies) if a >= TARGET_ACCURACY), None)
        rows = [tuple(v.item() if isinstance(v, np.generic) else v for v in row)
                for row in final.itertuples(index=False, name=None)]
        return list(final.columns), rows, {"progressive": {
            "first_s": arrivals[0][0], "accuracy95_s": accurate, "final_s": arrivals[-1][0], "batches": job.batches,
            "quarter_accuracy": accuracies[max(1, job.batches // 4) - 1]}}
