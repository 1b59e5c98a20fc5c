package dev.sparkrm.telemetry;

import org.apache.spark.executor.TaskMetrics;

/** Running sums of {@link TaskMetric} over a stage attempt or a job, plus task counts. */
final class MetricTotals {
  private final long[] sums = new long[TaskMetric.values().length];
  private long tasks;
  private long failedTasks;

  void add(TaskMetrics metrics, boolean successful) {
    tasks++;
    if (!successful) failedTasks++;
    for (TaskMetric m : TaskMetric.values()) {
      sums[m.ordinal()] += m.of(metrics);
    }
  }

  void addAll(MetricTotals other) {
    tasks += other.tasks;
    failedTasks += other.failedTasks;
    for (int i = 0; i < sums.length; i++) sums[i] += other.sums[i];
  }

  long tasks() {
    return tasks;
  }

  long failedTasks() {
    return failedTasks;
  }

  long sum(TaskMetric m) {
    return sums[m.ordinal()];
  }

  /** Appends the task counts and every metric sum to {@code schema}, read through {@code totals}. */
  static <T> RecordSchema<T> declareFields(
      RecordSchema<T> schema, java.util.function.Function<T, MetricTotals> totals) {
    schema.field("tasks", "int", v -> totals.apply(v).tasks());
    schema.field("failedTasks", "int", v -> totals.apply(v).failedTasks());
    for (TaskMetric m : TaskMetric.values()) {
      schema.field(m.field(), "int", v -> totals.apply(v).sum(m));
    }
    return schema;
  }
}
