"""Totals of Riffle's telemetry records: how merging went and what reducers read.

Works on the tables of :meth:`spark_plugin.Telemetry.records` (live) or
:func:`spark_plugin.read_telemetry` (a file): ``merge`` (one per merge),
``shuffle_merge`` (one per shuffle when its merged set is sealed) and
``shuffle_read`` (one per reduce task).
"""

from __future__ import annotations

from collections import Counter


def merge_summary(records: dict) -> dict:
    """Summarize merges, seals and reads.

    Returns
    -------
    dict
        ``merges`` (count per status: committed, failed, cancelled), ``bytes_merged``,
        ``merge_ms`` and ``queue_wait_ms`` (sums over merges that ran), ``max_queue_wait_ms``,
        ``peak_buffer_bytes``; ``shuffles`` (sealed count), ``seal_reasons``, ``seal_wait_ms``
        (sum: time reducers waited after their map stage); ``reduce_tasks``, ``merged_blocks``,
        ``original_blocks``, ``fallbacks`` and ``reads_per_task``.
    """
    merges = records["merge"].to_pylist()
    sealed = records["shuffle_merge"].to_pylist()
    reads = records["shuffle_read"].to_pylist()
    ran = [m for m in merges if m["mergeMs"] is not None]
    blocks = sum(r["mergedBlocks"] + r["originalBlocks"] for r in reads)
    return {
        "merges": dict(Counter(m["status"] for m in merges)),
        "bytes_merged": sum(m["outputBytes"] for m in merges if m["status"] == "committed"),
        "merge_ms": sum(m["mergeMs"] for m in ran),
        "queue_wait_ms": sum(m["queueWaitMs"] for m in ran),
        "max_queue_wait_ms": max((m["queueWaitMs"] for m in ran), default=0),
        "peak_buffer_bytes": max((m["peakBufferBytes"] or 0 for m in merges), default=0),
        "shuffles": len(sealed),
        "seal_reasons": dict(Counter(s["sealReason"] for s in sealed)),
        "seal_wait_ms": sum(s["sealWaitMs"] for s in sealed),
        "reduce_tasks": len(reads),
        "merged_blocks": sum(r["mergedBlocks"] for r in reads),
        "original_blocks": sum(r["originalBlocks"] for r in reads),
        "fallbacks": sum(r["fallbacks"] for r in reads),
        "reads_per_task": blocks / len(reads) if reads else 0.0,
    }
