"""Riffle: merging small shuffle map outputs into large files inside Spark's executors.

Switch it on with the ``riffle`` feature (``spark_plugin.session(features=["telemetry",
"riffle"])`` or ``python -m spark_plugin submit-args --features telemetry,riffle``), which sets
``spark.shuffle.manager=dev.sparkrm.riffle.RiffleShuffleManager`` and ``spark.riffle.enabled``.

This package holds the parts that need no JVM: the merge policies
(:class:`MergePolicy`, :func:`plan_merges`, the same rules the driver applies), the thesis's
request model (:class:`RequestModel`), per-job settings (:func:`job_settings`) and
:func:`merge_summary` of the telemetry records.
The shuffle manager, merger and reader are Java, under ``shuffle_merge/jvm``.
"""

from .cost_model import RequestModel, reads_per_reducer as model_reads_per_reducer
from .job import job_settings
from .merge_policy import MapOutput, MergePolicy, plan_merges, reads_per_reducer
from .stats import merge_summary

__all__ = ["MapOutput", "MergePolicy", "RequestModel", "job_settings", "merge_summary",
           "model_reads_per_reducer", "plan_merges", "reads_per_reducer"]
