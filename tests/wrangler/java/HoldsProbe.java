package dev.sparkrm.wrangler;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sparkrm.rpc.MessageRouter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Wrangler's decisions, holds, guard and safety checks over a plain scheduler and a clock the test sets:
 * nothing runs by itself, each {@link #decide} and {@link #tick} happens at {@link #now}. Built by
 * tests/wrangler/test_decisions.py (in the package, so it reaches the package-private parts).
 */
public final class HoldsProbe {
  /** The clock every component reads, in epoch ms; the test moves it ({@link #at}). */
  private long now = 1_000_000;
  private final Scheduler offers;
  private final FeedbackGuard guard;
  private final HoldSafety safety;
  private final ExecutorHolds holds;
  private final JvmDecisions decisions;
  private final TaskQueue queue;
  private final Map<Long, Long> launched = new HashMap<>();
  private final List<Map<String, Object>> ended = new ArrayList<>();
  private final List<Map<String, Object>> refuted = new ArrayList<>();
  private final ObjectMapper json = new ObjectMapper();

  /**
   * @param executors comma-separated executor ids
   * @param windowMs the guard's window, 0 for no guard
   * @param idleLimitMs {@code Long.MAX_VALUE} without dynamic allocation
   * @param maxShare the largest share of the executors held at once
   * @param waitAware whether holds are priced against the task queue (each executor one slot)
   */
  public HoldsProbe(String executors, long intervalMs, long maxHoldMs, long windowMs, double beta, long idleLimitMs,
      double maxShare, boolean waitAware) {
    offers = new Scheduler(executors.split(","));
    guard = windowMs > 0 ? new FeedbackGuard(windowMs, 1, beta, 2 * maxHoldMs) : null;
    safety = new HoldSafety(idleLimitMs);
    holds = new ExecutorHolds(maxHoldMs, intervalMs, guard, safety, h -> ended.add(record(h)),
        (verdict, backoff) -> refuted.add(Map.of("executorId", verdict.executorId(), "time", now, "tasks",
            verdict.tasks(), "executorMedian", verdict.executorMedian(), "othersMedian", verdict.othersMedian(),
            "backoffMs", backoff)), () -> now);
    holds.bind(offers);
    queue = waitAware ? new TaskQueue(beta, guard) : null;
    decisions = new JvmDecisions(null, holds, queue, intervalMs, 0.7, maxShare, false, "default", () -> now);
    for (String id : offers.executors) {
      safety.executorAdded(id, now);
      if (queue != null) queue.executorAdded(id, 1);
    }
  }

  private static Map<String, Object> record(ExecutorHolds.Hold h) {
    return Map.of("executorId", h.executorId, "startTime", h.startTime, "endTime", h.endTime, "durationMs",
        h.endTime - h.startTime, "endReason", h.endReason, "confidence", h.confidence);
  }

  /** Sets the clock to {@code time} (epoch ms). */
  public void at(long time) {
    now = time;
  }

  public long now() {
    return now;
  }

  public JvmDecisions decisions() {
    return decisions;
  }

  public ExecutorHolds holds() {
    return holds;
  }

  /** One decision tick at {@link #now}. */
  public void decide() {
    decisions.decide(now);
  }

  /** One hold tick at {@link #now}: expiry, cap, Spark's needs, the guard after finished tasks. */
  public void tick() {
    holds.tick();
  }

  /** A node sample of {@code executorId} stamped {@code time}, with one counter. */
  public void sample(String executorId, long time, double cpuIdlePct) {
    ObjectNode s = json.createObjectNode();
    s.put("executorId", executorId);
    s.put("time", time);
    s.put("cpuIdlePct", cpuIdlePct);
    decisions.sample(s);
  }

  public void taskStarted(String executorId) {
    safety.taskStarted(executorId);
  }

  /** A successful task of {@code stage} ends on {@code executorId} now, {@code normalized} its duration per byte. */
  public void taskEnded(String executorId, String stage, double normalized) {
    safety.taskEnded(executorId, now);
    if (guard == null) return;
    guard.taskEnded(executorId, stage, normalized, now);
    holds.judgeAfterTask(executorId);
  }

  /** {@link TaskQueue#queueWait}, which is package-private. */
  public static double queueWait(double[] runningLeft, double[] queued, int freeSlots) {
    return TaskQueue.queueWait(runningLeft, queued, freeSlots);
  }

  /** A stage of {@code numTasks} tasks is submitted now (the queue needs {@code waitAware}). */
  public void stage(String stage, int numTasks) {
    queue.stageSubmitted(stage, numTasks);
  }

  /** Task {@code index} of {@code stage} starts on {@code executorId} now. */
  public void launch(long taskId, String executorId, String stage, int index) {
    launched.put(taskId, now);
    taskStarted(executorId);
    queue.taskStarted(taskId, executorId, stage, index, now);
  }

  /** Task {@code taskId} of {@code stage} ends now on {@code executorId}, successfully; the guard sees its duration. */
  public void finish(long taskId, String executorId, String stage) {
    long duration = now - launched.remove(taskId);
    queue.taskEnded(taskId, true, duration);
    taskEnded(executorId, stage, duration);
  }

  /** Spark loses {@code executorId}. */
  public void remove(String executorId) {
    offers.executors.remove(executorId);
    offers.withheld.remove(executorId);
    holds.executorRemoved(executorId);
    decisions.executorRemoved(executorId);
    safety.executorRemoved(executorId);
  }

  public void barrierWaiting(boolean waiting) {
    offers.barrier = waiting;
  }

  /** Spark parks a decommission of {@code executorId}, asked while it was inactive. */
  public void parkDecommission(String executorId) {
    offers.parked.add(executorId);
  }

  /** Whether offers are kept from {@code executorId} now. */
  public boolean withheld(String executorId) {
    return offers.withheld.contains(executorId);
  }

  /** Executors Spark decommissioned (re-issued or asked), in order. */
  public String decommissioned() {
    return String.join(",", offers.decommissioned);
  }

  public String endedJson() {
    return MessageRouter.toJson(ended);
  }

  public String refutedJson() {
    return MessageRouter.toJson(refuted);
  }

  /** A plain scheduler: an executor is active while registered, not withheld and not decommissioning. */
  private static final class Scheduler implements Offers {
    final Set<String> executors;
    final Set<String> withheld = new HashSet<>();
    final Set<String> parked = new HashSet<>();
    final List<String> decommissioned = new ArrayList<>();
    boolean barrier;

    Scheduler(String[] ids) {
      executors = new LinkedHashSet<>(Arrays.asList(ids));
    }

    @Override
    public Object lock() {
      return this;
    }

    @Override
    public void withhold(String executorId, boolean held) {
      if (held) withheld.add(executorId);
      else withheld.remove(executorId);
    }

    @Override
    public boolean isActive(String executorId) {
      return executors.contains(executorId) && !withheld.contains(executorId) && !decommissioned.contains(executorId);
    }

    @Override
    public List<String> executorIds() {
      return new ArrayList<>(executors);
    }

    @Override
    public void reviveOffers() {}

    @Override
    public boolean barrierWaiting() {
      return barrier;
    }

    @Override
    public boolean parkedDecommission(String executorId) {
      return parked.contains(executorId);
    }

    @Override
    public boolean reissueParkedDecommission(String executorId) {
      if (!parked.remove(executorId)) return false;
      decommissioned.add(executorId);
      return true;
    }

    @Override
    public boolean decommission(String executorId, String why) {
      decommissioned.add(executorId);
      return true;
    }

    @Override
    public boolean decommissioning(String executorId) {
      return decommissioned.contains(executorId);
    }
  }
}
