package dev.sparkrm.telemetry;

import java.util.Arrays;
import java.util.List;
import org.apache.spark.ExceptionFailure;
import org.apache.spark.FetchFailed;
import org.apache.spark.TaskFailedReason;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.StageInfo;
import org.apache.spark.scheduler.TaskInfo;
import scala.Option;

/**
 * The telemetry record types and their fields. Adding a field here adds it to the JSON lines,
 * the file and the Arrow tables Python builds; README's telemetry section documents each one.
 */
final class Records {
  private Records() {}

  /** A finished task attempt, with the job it ran for (-1 when unknown). */
  record TaskView(SparkListenerTaskEnd event, int jobId, String jobGroup) {
    TaskInfo info() {
      return event.taskInfo();
    }
  }

  /** A completed (or failed) stage attempt and the sums of its tasks. */
  record StageView(StageInfo info, int jobId, MetricTotals totals) {}

  /** A finished job and the sums of all its tasks. */
  record JobView(int jobId, String jobGroup, String description, long submissionTime,
      long completionTime, String status, long[] stageIds, MetricTotals totals) {}

  /** An executor added, removed (both from listener events) or registered (from its plugin). */
  record ExecutorView(String event, String executorId, String host, int cores, long time,
      String reason, long pid) {}

  static final RecordSchema<TaskView> TASK = taskSchema();
  static final RecordSchema<StageView> STAGE = stageSchema();
  static final RecordSchema<JobView> JOB = jobSchema();
  static final RecordSchema<ExecutorView> EXECUTOR = new RecordSchema<ExecutorView>("executor")
      .field("event", "string", ExecutorView::event)
      .field("executorId", "string", ExecutorView::executorId)
      .field("host", "string", ExecutorView::host)
      .field("cores", "int", ExecutorView::cores)
      .field("time", "int", ExecutorView::time)
      .field("reason", "string", ExecutorView::reason)
      .field("pid", "int", v -> v.pid() < 0 ? null : v.pid());

  static final List<RecordSchema<?>> ALL = Arrays.asList(TASK, STAGE, JOB, EXECUTOR);

  private static RecordSchema<TaskView> taskSchema() {
    RecordSchema<TaskView> s = new RecordSchema<TaskView>("task")
        .field("jobId", "int", TaskView::jobId)
        .field("jobGroup", "string", TaskView::jobGroup)
        .field("stageId", "int", v -> v.event().stageId())
        .field("stageAttempt", "int", v -> v.event().stageAttemptId())
        .field("taskId", "int", v -> v.info().taskId())
        .field("partition", "int", v -> v.info().index())
        .field("attempt", "int", v -> v.info().attemptNumber())
        .field("taskType", "string", v -> v.event().taskType())
        .field("executorId", "string", v -> v.info().executorId())
        .field("host", "string", v -> v.info().host())
        .field("locality", "string", v -> v.info().taskLocality().toString())
        .field("speculative", "bool", v -> v.info().speculative())
        .field("status", "string", v -> v.info().status())
        .field("failureReason", "string", v -> failureReason(v.event()))
        .field("launchTime", "int", v -> v.info().launchTime())
        .field("finishTime", "int", v -> v.info().finishTime())
        .field("durationMs", "int", v -> v.info().finishTime() - v.info().launchTime())
        .field("peakExecutionMemoryBytes", "int",
            v -> v.event().taskMetrics() == null ? 0L : v.event().taskMetrics().peakExecutionMemory());
    for (TaskMetric m : TaskMetric.values()) {
      s.field(m.field(), "int", v -> m.of(v.event().taskMetrics()));
    }
    return s;
  }

  private static RecordSchema<StageView> stageSchema() {
    RecordSchema<StageView> s = new RecordSchema<StageView>("stage")
        .field("jobId", "int", StageView::jobId)
        .field("stageId", "int", v -> v.info().stageId())
        .field("stageAttempt", "int", v -> v.info().attemptNumber())
        .field("name", "string", v -> v.info().name())
        .field("numTasks", "int", v -> v.info().numTasks())
        .field("status", "string", v -> v.info().failureReason().isDefined() ? "failed" : "succeeded")
        .field("failureReason", "string", v -> v.info().failureReason().getOrElse(() -> null))
        .field("shuffleId", "int", v -> optionalLong(v.info().shuffleDepId()))
        .field("submissionTime", "int", v -> optionalLong(v.info().submissionTime()))
        .field("completionTime", "int", v -> optionalLong(v.info().completionTime()));
    return MetricTotals.declareFields(s, StageView::totals);
  }

  private static RecordSchema<JobView> jobSchema() {
    RecordSchema<JobView> s = new RecordSchema<JobView>("job")
        .field("jobId", "int", JobView::jobId)
        .field("jobGroup", "string", JobView::jobGroup)
        .field("description", "string", JobView::description)
        .field("status", "string", JobView::status)
        .field("submissionTime", "int", JobView::submissionTime)
        .field("completionTime", "int", JobView::completionTime)
        .field("stageIds", "int_list", JobView::stageIds);
    return MetricTotals.declareFields(s, JobView::totals);
  }

  private static Long optionalLong(Option<Object> o) {
    return o.isDefined() ? ((Number) o.get()).longValue() : null;
  }

  /**
   * Why a task failed: for an exception its class and message (for a Python worker that message
   * is the traceback, which ends with the Python exception), else Spark's description. Long texts
   * keep their last {@value #MAX_REASON} characters, where the cause is. A fetch failure is named
   * with the block and the first line of its message (its full text is mostly a stack trace).
   */
  private static String failureReason(SparkListenerTaskEnd e) {
    if (!(e.reason() instanceof TaskFailedReason)) return null;
    if (e.reason() instanceof FetchFailed f) {
      String message = f.message() == null ? "" : f.message().strip().lines().findFirst().orElse("");
      return "FetchFailed(" + f.bmAddress() + ", shuffle " + f.shuffleId() + ", map index " + f.mapIndex()
          + ", partition " + f.reduceId() + "): " + message;
    }
    String text = e.reason() instanceof ExceptionFailure
        ? ((ExceptionFailure) e.reason()).className() + ": " + ((ExceptionFailure) e.reason()).description()
        : ((TaskFailedReason) e.reason()).toErrorString();
    text = text.strip();
    return text.length() > MAX_REASON ? "..." + text.substring(text.length() - MAX_REASON) : text;
  }

  private static final int MAX_REASON = 2000;
}
