package dev.sparkrm.wrangler;

import dev.sparkrm.telemetry.TaskMetric;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.scheduler.SparkListenerTaskEnd;

/**
 * Checks online that holds go to slow executors, whatever the model says (the thesis checks its p
 * online, spec section on choosing p).
 *
 * <p>A model can be wrong in a way no offline score shows: trained on another cluster, on too little
 * data, or on noise that has since moved. A hold is a claim that its executor's tasks straggle <em>now</em>,
 * and the tasks that were running on it when the hold began are its witnesses: each tells, when it ends,
 * how slow the executor was, as its duration per byte moved (plain duration for tasks that moved nothing)
 * relative to the median of the same stage's recent tasks, as Wrangler's labels measure it. A hold is
 * <em>refuted</em> once at least {@code minTasks} witnesses have ended and their median relative
 * duration is not above {@code beta} (the labels' straggler threshold) times the other executors' recent
 * median: its tasks did not straggle by the model's own definition, so holding it cannot help. The hold
 * ends at once and the executor is not held again for a back-off that doubles with each refutation in a
 * row (up to {@link #MAX_BACKOFF_FACTOR} times); only a hold that was judged and stood to its end clears
 * the count (one slow-looking witness under load must not reset the back-off). Past tasks do not judge a
 * hold of a busy executor: Wrangler exists to act on slowness its node counters foresee before any task
 * shows it, so only the tasks that ran through the hold judge it. An idle executor has no witness, and an
 * unjudged hold ran to the cap: there the executor's recent tasks are the witnesses.
 */
final class FeedbackGuard {
  static final int MAX_BACKOFF_FACTOR = 16;

  /** One successful task: its executor, the peers it is compared with, and its normalized duration. */
  private record Task(String executorId, String peers, double normalized, long endTime) {}

  /** What the recent tasks say of one executor; {@code tasks == 0} when not judged. */
  record Verdict(String executorId, int tasks, double executorMedian, double othersMedian, double beta) {
    boolean judged() {
      return tasks > 0;
    }

    boolean refuted() {
      return judged() && executorMedian <= beta * othersMedian;
    }
  }

  private final long windowMs;
  private final int minTasks;
  private final double beta;
  private final long backoffMs;
  private final ArrayDeque<Task> recent = new ArrayDeque<>();
  private final Map<String, Long> distrustedUntil = new HashMap<>();
  private final Map<String, Integer> strikes = new HashMap<>();

  /** @param beta how much slower than the others the witnesses must run for a hold to stand */
  FeedbackGuard(long windowMs, int minTasks, double beta, long backoffMs) {
    this.windowMs = windowMs;
    this.minTasks = minTasks;
    this.beta = beta;
    this.backoffMs = backoffMs;
  }

  /** Keeps a successful task's normalized duration (from the listener bus). */
  void taskEnded(SparkListenerTaskEnd e) {
    if (!e.taskInfo().successful()) return;
    TaskMetrics m = e.taskMetrics();
    long bytes = 0;
    for (TaskMetric f : new TaskMetric[] {TaskMetric.INPUT_BYTES, TaskMetric.SHUFFLE_LOCAL_BYTES,
        TaskMetric.SHUFFLE_REMOTE_BYTES, TaskMetric.OUTPUT_BYTES, TaskMetric.SHUFFLE_WRITE_BYTES}) {
      bytes += f.of(m);
    }
    long duration = e.taskInfo().duration();
    String peers = e.stageId() + "." + e.stageAttemptId() + (bytes > 0 ? "+" : "0");
    taskEnded(e.taskInfo().executorId(), peers, bytes > 0 ? (double) duration / bytes : duration,
        e.taskInfo().finishTime());
  }

  synchronized void taskEnded(String executorId, String peers, double normalized, long endTime) {
    recent.addLast(new Task(executorId, peers, normalized, endTime));
    forgetBefore(endTime - windowMs);
  }

  /** Until when {@code executorId} may not be held (0 when it may). */
  synchronized long distrustedUntil(String executorId) {
    return distrustedUntil.getOrDefault(executorId, 0L);
  }

  /**
   * Judges a hold of {@code executorId}: its witnesses are the executor's tasks of the window that ended
   * after {@code witnessesFrom} (the hold's start for a busy executor), its peers the other executors' tasks
   * of the window before {@code now}.
   */
  synchronized Verdict verdict(String executorId, long witnessesFrom, long now) {
    forgetBefore(now - windowMs);
    Map<String, List<Double>> byPeers = new HashMap<>();
    for (Task t : recent) byPeers.computeIfAbsent(t.peers(), k -> new ArrayList<>()).add(t.normalized());
    Map<String, Double> peerMedian = new HashMap<>();
    byPeers.forEach((peers, values) -> {
      if (values.size() >= 2) peerMedian.put(peers, median(values));
    });
    List<Double> mine = new ArrayList<>();
    List<Double> others = new ArrayList<>();
    for (Task t : recent) {
      Double m = peerMedian.get(t.peers());
      if (m == null || m <= 0) continue;
      if (!t.executorId().equals(executorId)) {
        others.add(t.normalized() / m);
      } else if (t.endTime() > witnessesFrom) {
        mine.add(t.normalized() / m);
      }
    }
    if (mine.size() < minTasks || others.size() < minTasks) {
      return new Verdict(executorId, 0, Double.NaN, Double.NaN, beta);
    }
    return new Verdict(executorId, mine.size(), median(mine), median(others), beta);
  }

  /** A judged hold of {@code executorId} stood to its end: refutations in a row start again from one. */
  synchronized void stood(String executorId) {
    strikes.remove(executorId);
  }

  /** Refuses holds of {@code executorId} for the next back-off; returns its length in ms. */
  synchronized long distrust(String executorId, long now) {
    int strike = strikes.merge(executorId, 1, Integer::sum);
    long backoff = backoffMs * Math.min(1L << Math.min(strike - 1, 30), MAX_BACKOFF_FACTOR);
    distrustedUntil.put(executorId, now + backoff);
    return backoff;
  }

  /** Drops tasks that ended before {@code time} (tasks arrive roughly in end order). */
  private void forgetBefore(long time) {
    while (!recent.isEmpty() && recent.peekFirst().endTime() < time) recent.removeFirst();
  }

  /** The median of {@code values} (not empty); {@link TaskQueue} takes its durations' medians here too. */
  static double median(List<Double> values) {
    double[] v = values.stream().mapToDouble(Double::doubleValue).toArray();
    Arrays.sort(v);
    int n = v.length;
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  }
}
