package dev.sparkrm.telemetry;

import dev.sparkrm.telemetry.Records.ExecutorView;
import dev.sparkrm.telemetry.Records.JobView;
import dev.sparkrm.telemetry.Records.StageView;
import dev.sparkrm.telemetry.Records.TaskView;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.scheduler.JobSucceeded$;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.scheduler.SparkListenerExecutorAdded;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerJobEnd;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.StageInfo;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns Spark listener events into telemetry records: one per finished task, per completed stage
 * attempt, per finished job, and per executor added or removed.
 *
 * <p>Spark calls a listener from one thread per queue, so the bookkeeping maps need no locks. A
 * callback never throws: an error is counted and logged once, and the event is skipped.
 */
public final class TelemetryListener extends SparkListener {
  private static final Logger LOG = LoggerFactory.getLogger(TelemetryListener.class);

  private final TelemetryStore store;
  private final Map<Integer, Integer> stageToJob = new HashMap<>();
  private final Map<Integer, JobState> jobs = new HashMap<>();
  private final Map<Long, MetricTotals> stageTotals = new HashMap<>();
  private final AtomicLong errors = new AtomicLong();

  private static final class JobState {
    final String group;
    final String description;
    final long submissionTime;
    final long[] stageIds;
    final MetricTotals totals = new MetricTotals();

    JobState(SparkListenerJobStart e) {
      Properties p = e.properties();
      this.group = p == null ? null : p.getProperty("spark.jobGroup.id");
      this.description = p == null ? null : p.getProperty("spark.job.description");
      this.submissionTime = e.time();
      scala.collection.immutable.Seq<Object> ids = e.stageIds();
      this.stageIds = new long[ids.size()];
      for (int i = 0; i < stageIds.length; i++) stageIds[i] = ((Number) ids.apply(i)).longValue();
    }
  }

  public TelemetryListener(TelemetryStore store) {
    this.store = store;
  }

  /** Number of events skipped because handling them failed. */
  public long errors() {
    return errors.get();
  }

  @Override
  public void onJobStart(SparkListenerJobStart e) {
    guard(() -> {
      JobState job = new JobState(e);
      jobs.put(e.jobId(), job);
      for (long stageId : job.stageIds) stageToJob.put((int) stageId, e.jobId());
    });
  }

  @Override
  public void onJobEnd(SparkListenerJobEnd e) {
    guard(() -> {
      JobState job = jobs.remove(e.jobId());
      if (job == null) return;
      stageToJob.values().removeIf(id -> id == e.jobId());
      String status = e.jobResult() == JobSucceeded$.MODULE$ ? "succeeded" : "failed";
      store.record(Records.JOB, new JobView(e.jobId(), job.group, job.description,
          job.submissionTime, e.time(), status, job.stageIds, job.totals));
      store.flush();
    });
  }

  @Override
  public void onTaskEnd(SparkListenerTaskEnd e) {
    guard(() -> {
      int jobId = stageToJob.getOrDefault(e.stageId(), -1);
      JobState job = jobs.get(jobId);
      store.record(Records.TASK, new TaskView(e, jobId, job == null ? null : job.group));
      boolean ok = e.taskInfo().successful();
      stageTotals.computeIfAbsent(stageKey(e.stageId(), e.stageAttemptId()), k -> new MetricTotals())
          .add(e.taskMetrics(), ok);
      if (job != null) job.totals.add(e.taskMetrics(), ok);
    });
  }

  @Override
  public void onStageCompleted(SparkListenerStageCompleted e) {
    guard(() -> {
      StageInfo info = e.stageInfo();
      MetricTotals totals = stageTotals.remove(stageKey(info.stageId(), info.attemptNumber()));
      int jobId = stageToJob.getOrDefault(info.stageId(), -1);
      store.record(Records.STAGE,
          new StageView(info, jobId, totals == null ? new MetricTotals() : totals));
      store.flush();
    });
  }

  @Override
  public void onExecutorAdded(SparkListenerExecutorAdded e) {
    guard(() -> store.record(Records.EXECUTOR, new ExecutorView("added", e.executorId(),
        e.executorInfo().executorHost(), e.executorInfo().totalCores(), e.time(), null, -1)));
  }

  @Override
  public void onExecutorRemoved(SparkListenerExecutorRemoved e) {
    guard(() -> store.record(Records.EXECUTOR,
        new ExecutorView("removed", e.executorId(), null, 0, e.time(), e.reason(), -1)));
  }

  @Override
  public void onApplicationEnd(SparkListenerApplicationEnd e) {
    guard(store::flush);
  }

  @Override
  public void onOtherEvent(SparkListenerEvent e) {
    if (e instanceof DrainMarker) ((DrainMarker) e).arrived();
  }

  private static long stageKey(int stageId, int attempt) {
    return ((long) stageId << 32) | attempt;
  }

  private void guard(Runnable handler) {
    try {
      handler.run();
    } catch (RuntimeException e) {
      if (errors.incrementAndGet() == 1) {
        LOG.error("Telemetry skipped an event it could not record; further errors are only counted", e);
      }
    }
  }
}
