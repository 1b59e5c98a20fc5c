package dev.sparkrm.telemetry;

import java.util.function.ToLongFunction;
import org.apache.spark.executor.TaskMetrics;

/**
 * The additive metrics of a task, in the units their names state.
 *
 * <p>Task records carry each of them; stage and job records carry their sums ({@link MetricTotals}).
 * Spark reports CPU and shuffle-write times in nanoseconds and the rest in milliseconds; the names
 * keep Spark's units rather than converting, so no precision is lost on short tasks.
 */
public enum TaskMetric {
  RUN_TIME_MS("runTimeMs", TaskMetrics::executorRunTime),
  CPU_TIME_NS("cpuTimeNs", TaskMetrics::executorCpuTime),
  GC_TIME_MS("gcTimeMs", TaskMetrics::jvmGCTime),
  DESERIALIZE_TIME_MS("deserializeTimeMs", TaskMetrics::executorDeserializeTime),
  RESULT_SIZE_BYTES("resultSizeBytes", TaskMetrics::resultSize),
  INPUT_BYTES("inputBytes", m -> m.inputMetrics().bytesRead()),
  INPUT_RECORDS("inputRecords", m -> m.inputMetrics().recordsRead()),
  OUTPUT_BYTES("outputBytes", m -> m.outputMetrics().bytesWritten()),
  SHUFFLE_LOCAL_BLOCKS("shuffleLocalBlocks", m -> m.shuffleReadMetrics().localBlocksFetched()),
  SHUFFLE_REMOTE_BLOCKS("shuffleRemoteBlocks", m -> m.shuffleReadMetrics().remoteBlocksFetched()),
  SHUFFLE_LOCAL_BYTES("shuffleLocalBytes", m -> m.shuffleReadMetrics().localBytesRead()),
  SHUFFLE_REMOTE_BYTES("shuffleRemoteBytes", m -> m.shuffleReadMetrics().remoteBytesRead()),
  SHUFFLE_REMOTE_BYTES_TO_DISK(
      "shuffleRemoteBytesToDisk", m -> m.shuffleReadMetrics().remoteBytesReadToDisk()),
  SHUFFLE_FETCH_WAIT_MS("shuffleFetchWaitMs", m -> m.shuffleReadMetrics().fetchWaitTime()),
  SHUFFLE_RECORDS_READ("shuffleRecordsRead", m -> m.shuffleReadMetrics().recordsRead()),
  SHUFFLE_WRITE_BYTES("shuffleWriteBytes", m -> m.shuffleWriteMetrics().bytesWritten()),
  SHUFFLE_WRITE_RECORDS("shuffleWriteRecords", m -> m.shuffleWriteMetrics().recordsWritten()),
  SHUFFLE_WRITE_TIME_NS("shuffleWriteTimeNs", m -> m.shuffleWriteMetrics().writeTime()),
  MEMORY_SPILL_BYTES("memorySpillBytes", TaskMetrics::memoryBytesSpilled),
  DISK_SPILL_BYTES("diskSpillBytes", TaskMetrics::diskBytesSpilled);

  private final String field;
  private final ToLongFunction<TaskMetrics> getter;

  TaskMetric(String field, ToLongFunction<TaskMetrics> getter) {
    this.field = field;
    this.getter = getter;
  }

  /** The JSON field name. */
  public String field() {
    return field;
  }

  /** This metric of {@code m}, or 0 when Spark sent no metrics (some failed tasks). */
  public long of(TaskMetrics m) {
    return m == null ? 0L : getter.applyAsLong(m);
  }
}
