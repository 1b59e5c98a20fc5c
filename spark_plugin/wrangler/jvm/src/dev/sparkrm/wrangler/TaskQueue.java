package dev.sparkrm.wrangler;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;

/**
 * The driver's task queue as the listener bus shows it, and what a hold would cost the tasks waiting in it
 * ({@code spark.wrangler.hold.waitAware}).
 *
 * <p>Spark already sends a slow executor fewer tasks, so holding one pays only where the work it would have
 * run can start elsewhere soon enough. Holding executor E moves E's share of the pending tasks onto the other
 * executors' slots: the last pending task (the held work) then starts later by the difference of two
 * queue waits, Yaq's estimator (Algorithm 2, the arithmetic of {@code spark_plugin.yaq.waiting.queue_wait},
 * checked against it in the tests) played over the open slots without E and with E. The straggle the hold
 * avoids is that task running on E: {@code (s - 1) d}, where {@code d} is its stage's median task duration
 * and {@code s} E's slowdown, the feedback guard's measure of E's recent tasks against the others', at
 * least the labels' {@code beta} (what the model's flag claims). The hold is kept only when the delay is the
 * smaller. Nothing pending means nothing waits: such a hold costs nothing and is kept, as is one the queue
 * cannot price yet (no task finished). E's queued tasks are counted at the others' speed, so the delay is
 * if anything overstated: the check errs toward not holding.
 */
final class TaskQueue {
  /** Finished task durations kept per stage, and across stages for stages none of whose tasks has finished. */
  static final int KEPT_DURATIONS = 200;

  /** What a hold of one executor costs and saves now, in ms; {@code delayMs} NaN when it cannot be priced. */
  record Cost(double delayMs, double avoidedMs, int pending) {
    /** Whether the held work waits less than the straggle it avoids (or nothing waits, or no price is known). */
    boolean worthIt() {
      return pending == 0 || Double.isNaN(delayMs) || delayMs < avoidedMs;
    }
  }

  private record Running(String executorId, String stage, int index, long launchTime) {}

  private static final class Stage {
    final int numTasks;
    final Set<Integer> succeeded = new HashSet<>();
    final ArrayDeque<Long> durations = new ArrayDeque<>();

    Stage(int numTasks) {
      this.numTasks = numTasks;
    }
  }

  private final double beta;
  private final FeedbackGuard guard;
  private final Map<String, Integer> slots = new HashMap<>();
  private final Map<Long, Running> running = new HashMap<>();
  /** Active stages in submission order, which is the order FIFO scheduling launches their tasks. */
  private final Map<String, Stage> stages = new LinkedHashMap<>();
  private final ArrayDeque<Long> recent = new ArrayDeque<>();

  /**
   * @param beta the labels' straggler threshold: the least slowdown a flag claims
   * @param guard measures each executor's recent slowdown; {@code null} to count every flag at {@code beta}
   */
  TaskQueue(double beta, FeedbackGuard guard) {
    this.beta = beta;
    this.guard = guard;
  }

  synchronized void executorAdded(String executorId, int taskSlots) {
    slots.put(executorId, Math.max(taskSlots, 1));
  }

  synchronized void executorRemoved(String executorId) {
    slots.remove(executorId);
    running.values().removeIf(r -> r.executorId().equals(executorId));
  }

  synchronized void stageSubmitted(String stage, int numTasks) {
    stages.put(stage, new Stage(numTasks));
  }

  synchronized void stageCompleted(String stage) {
    stages.remove(stage);
    running.values().removeIf(r -> r.stage().equals(stage));
  }

  synchronized void taskStarted(long taskId, String executorId, String stage, int index, long launchTime) {
    running.put(taskId, new Running(executorId, stage, index, launchTime));
  }

  synchronized void taskEnded(long taskId, boolean successful, long durationMs) {
    Running r = running.remove(taskId);
    if (r == null || !successful) return;
    Stage s = stages.get(r.stage());
    if (s != null) {
      s.succeeded.add(r.index());
      keep(s.durations, durationMs);
    }
    keep(recent, durationMs);
  }

  /**
   * What holding {@code executorId} costs at {@code now}, with the executors in {@code closed} taking no tasks
   * (held already, or chosen for holding in the same tick).
   */
  synchronized Cost holdCost(String executorId, Set<String> closed, long now) {
    Map<String, Double> medians = new HashMap<>();
    Double fallback = median(recent);
    List<Double> pending = new ArrayList<>();
    for (Map.Entry<String, Stage> e : stages.entrySet()) {
      Stage s = e.getValue();
      Set<Integer> taken = new HashSet<>(s.succeeded);
      for (Running r : running.values()) {
        if (r.stage().equals(e.getKey())) taken.add(r.index());
      }
      Double d = s.durations.isEmpty() ? fallback : median(s.durations);
      medians.put(e.getKey(), d);
      for (int i = taken.size(); i < s.numTasks; i++) pending.add(d);
    }
    if (pending.isEmpty()) return new Cost(0, Double.NaN, 0);
    if (pending.contains(null)) return new Cost(Double.NaN, Double.NaN, pending.size());
    double s = slowdown(executorId, now);
    List<Double> others = new ArrayList<>();
    List<Double> own = new ArrayList<>();
    for (Map.Entry<String, Integer> e : slots.entrySet()) {
      String id = e.getKey();
      if (closed.contains(id) && !id.equals(executorId)) continue;
      boolean mine = id.equals(executorId);
      List<Double> into = mine ? own : others;
      int busy = 0;
      for (Running r : running.values()) {
        if (!r.executorId().equals(id)) continue;
        Double d = medians.getOrDefault(r.stage(), fallback);
        double need = (d == null ? 0 : d) * (mine ? s : 1);
        into.add(Math.max(need - (now - r.launchTime()), 0));
        busy++;
      }
      for (int i = busy; i < e.getValue(); i++) into.add(0.0);
    }
    double[] ahead = pending.subList(0, pending.size() - 1).stream().mapToDouble(Double::doubleValue).toArray();
    List<Double> all = new ArrayList<>(others);
    all.addAll(own);
    double without = queueWait(toArray(all), ahead, 0);
    double with = others.isEmpty() ? Double.POSITIVE_INFINITY : queueWait(toArray(others), ahead, 0);
    return new Cost(with - without, (s - 1) * pending.get(pending.size() - 1), pending.size());
  }

  /** The slowdown a hold of {@code executorId} claims: the guard's measure of its recent tasks, at least beta. */
  private double slowdown(String executorId, long now) {
    if (guard == null) return beta;
    FeedbackGuard.Verdict v = guard.verdict(executorId, Long.MIN_VALUE, now);
    return v.judged() && v.othersMedian() > 0 ? Math.max(beta, v.executorMedian() / v.othersMedian()) : beta;
  }

  /**
   * How long (in the unit of its arguments) a task arriving now waits before it starts: each queued task, in order, takes the
   * slot that frees first; the new one waits for the slot that frees after them. Any free slot: no wait.
   *
   * @param runningLeft time each busy slot still needs
   * @param queued durations of the tasks queued ahead, in start order
   */
  static double queueWait(double[] runningLeft, double[] queued, int freeSlots) {
    if (freeSlots > 0 || runningLeft.length == 0) return 0;
    PriorityQueue<Double> free = new PriorityQueue<>();
    for (double t : runningLeft) free.add(Math.max(t, 0));
    for (double d : queued) free.add(free.poll() + Math.max(d, 0));
    return free.peek();
  }

  private static double[] toArray(List<Double> values) {
    return values.stream().mapToDouble(Double::doubleValue).toArray();
  }

  private static Double median(ArrayDeque<Long> values) {
    return values.isEmpty() ? null : FeedbackGuard.median(values.stream().map(Long::doubleValue).toList());
  }

  private static void keep(ArrayDeque<Long> kept, long value) {
    kept.addLast(value);
    if (kept.size() > KEPT_DURATIONS) kept.removeFirst();
  }
}
