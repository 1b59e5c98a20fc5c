package dev.sparkrm.riffle;

import dev.sparkrm.conf.SparkrmConfigException;
import java.util.HashMap;
import java.util.Map;
import java.util.function.LongSupplier;
import org.apache.spark.Success$;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.StageInfo;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Feeds the scheduler the map-stage events it needs: a stage writing a shuffle starts, one of its
 * tasks succeeds (the map output's id, index, executor, host and size), the stage ends.
 *
 * <p>Spark names map outputs by the task attempt id, or by the partition index when
 * {@code spark.shuffle.useOldFetchProtocol} is on. A callback never throws.
 */
final class RiffleListener extends SparkListener {
  private static final Logger LOG = LoggerFactory.getLogger(RiffleListener.class);

  private final RiffleScheduler scheduler;
  private final Map<String, String> appConf;
  private final boolean oldFetchProtocol;
  private final LongSupplier clock;
  private final Map<Integer, Integer> stageToShuffle = new HashMap<>();
  private boolean errorLogged;

  /**
   * @param appConf the application's {@code spark.riffle.*} entries, to which job properties are applied
   * @param clock   the time (ms) each event is handed to the scheduler with
   */
  RiffleListener(RiffleScheduler scheduler, Map<String, String> appConf, boolean oldFetchProtocol,
      LongSupplier clock) {
    this.scheduler = scheduler;
    this.appConf = appConf;
    this.oldFetchProtocol = oldFetchProtocol;
    this.clock = clock;
  }

  @Override
  public void onStageSubmitted(SparkListenerStageSubmitted e) {
    guard(() -> {
      StageInfo info = e.stageInfo();
      if (info.shuffleDepId().isEmpty()) return;
      int shuffleId = ((Number) info.shuffleDepId().get()).intValue();
      stageToShuffle.put(info.stageId(), shuffleId);
      scheduler.mapStageSubmitted(shuffleId, info.numTasks(), jobSettings(e, shuffleId), clock.getAsLong());
    });
  }

  @Override
  public void onTaskEnd(SparkListenerTaskEnd e) {
    guard(() -> {
      Integer shuffleId = stageToShuffle.get(e.stageId());
      if (shuffleId == null || e.reason() != Success$.MODULE$ || e.taskMetrics() == null) return;
      long mapId = oldFetchProtocol ? e.taskInfo().partitionId() : e.taskInfo().taskId();
      scheduler.mapOutput(shuffleId, e.taskInfo().partitionId(), mapId, e.taskInfo().executorId(), e.taskInfo().host(),
          e.taskMetrics().shuffleWriteMetrics().bytesWritten(), clock.getAsLong());
    });
  }

  @Override
  public void onStageCompleted(SparkListenerStageCompleted e) {
    guard(() -> {
      StageInfo info = e.stageInfo();
      Integer shuffleId = stageToShuffle.get(info.stageId());
      if (shuffleId == null) return;
      scheduler.mapStageCompleted(shuffleId, info.failureReason().isEmpty(), clock.getAsLong());
    });
  }

  @Override
  public void onExecutorRemoved(SparkListenerExecutorRemoved e) {
    guard(() -> scheduler.executorRemoved(e.executorId()));
  }

  /** The job's per-job overrides, or {@code null}; a bad one is reported and ignored (the job runs). */
  private ShuffleSettings jobSettings(SparkListenerStageSubmitted e, int shuffleId) {
    try {
      return ShuffleSettings.forJob(appConf, e.properties());
    } catch (SparkrmConfigException ex) {
      LOG.warn("Shuffle {} ignores its job's Riffle properties and uses the application's: {}",
          shuffleId, ex.getMessage());
      return null;
    }
  }

  private void guard(Runnable handler) {
    try {
      handler.run();
    } catch (RuntimeException ex) {
      if (!errorLogged) {
        errorLogged = true;
        LOG.error("Riffle skipped a listener event it could not handle; affected shuffles read unmerged", ex);
      }
    }
  }
}
