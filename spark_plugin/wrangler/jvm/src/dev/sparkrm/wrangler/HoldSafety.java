package dev.sparkrm.wrangler;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What Spark needs from an executor that a hold would deny: {@link ExecutorHolds} asks before every hold
 * and on every tick, and a hold Spark needs ended ends at once.
 *
 * <p>A held executor sits in the backend's pending-loss-reason set, so Spark counts it inactive. Three
 * things that look for active executors would go wrong:
 * <ul>
 *   <li>{@code barrier}: a barrier job whose stage finds too few slots (held executors do not count) waits
 *       in {@code DAGScheduler.barrierJobIdToNumTasksCheckFailures} for a retry. While any job waits there,
 *       every hold ends and none is placed, so the retry finds every slot.</li>
 *   <li>{@code decommission}: {@code decommissionExecutors} skips inactive executors and parks the request
 *       in {@code unknownExecutorsPendingDecommission} (an executor that asked to decommission itself, on
 *       SIGPWR, then gives up). A held executor found there is released and its decommission re-issued from
 *       the driver, which tells the executor to decommission.</li>
 *   <li>{@code idle}: with dynamic allocation, an executor idle for {@code executorIdleTimeout} is removed,
 *       and a hold makes its executor idle. An executor idle for half that timeout is not held and its hold
 *       ends, so it gets offers again long before it would time out.</li>
 * </ul>
 * Dynamic allocation's requests are not affected by holds: it sizes the application from pending plus
 * running tasks, a sum a hold does not change.
 */
final class HoldSafety {
  private static final Logger LOG = LoggerFactory.getLogger(HoldSafety.class);

  /** Idle time after which a held executor is given back; {@code Long.MAX_VALUE} without dynamic allocation. */
  private final long idleLimitMs;
  private final Map<String, Integer> runningTasks = new ConcurrentHashMap<>();
  private final Map<String, Long> idleSince = new ConcurrentHashMap<>();

  /** @param idleLimitMs idle time after which a held executor is given back ({@code Long.MAX_VALUE}: never) */
  HoldSafety(long idleLimitMs) {
    this.idleLimitMs = idleLimitMs;
  }

  /** Half of dynamic allocation's {@code executorIdleTimeout} when it is on, else no idle limit. */
  static HoldSafety of(SparkContext sc) {
    boolean dynamic = sc.conf().getBoolean("spark.dynamicAllocation.enabled", false);
    return new HoldSafety(dynamic
        ? sc.conf().getTimeAsMs("spark.dynamicAllocation.executorIdleTimeout", "60s") / 2 : Long.MAX_VALUE);
  }

  void executorAdded(String executorId, long time) {
    idleSince.putIfAbsent(executorId, time);
  }

  void taskStarted(String executorId) {
    runningTasks.merge(executorId, 1, Integer::sum);
    idleSince.remove(executorId);
  }

  void taskEnded(String executorId, long now) {
    if (runningTasks.merge(executorId, -1, Integer::sum) <= 0) {
      runningTasks.remove(executorId);
      idleSince.put(executorId, now);
    }
  }

  void executorRemoved(String executorId) {
    runningTasks.remove(executorId);
    idleSince.remove(executorId);
  }

  /** Whether {@code executorId} runs a task now (as the listener bus has reported so far). */
  boolean busy(String executorId) {
    return runningTasks.containsKey(executorId);
  }

  /** Why {@code executorId} must not be held now: {@code barrier}, {@code decommission}, {@code idle}, or null. */
  String objection(String executorId, Offers offers, long now) {
    if (offers.barrierWaiting()) return "barrier";
    if (offers.parkedDecommission(executorId)) return "decommission";
    if (idleLimitMs != Long.MAX_VALUE && !runningTasks.containsKey(executorId)
        && now - idleSince.computeIfAbsent(executorId, id -> now) >= idleLimitMs) {
      return "idle";
    }
    return null;
  }

  /**
   * What follows the end of a hold for {@code reason}: for {@code decommission}, the request Spark parked
   * is re-issued or, when none was parked (the executor asked itself, on a signal), one is made.
   */
  void afterEnd(String executorId, String reason, Offers offers) {
    if (!"decommission".equals(reason)) return;
    boolean done = offers.reissueParkedDecommission(executorId)
        || offers.decommission(executorId, "Executor " + executorId + " is decommissioned.");
    LOG.info("Wrangler released executor {} to be decommissioned, as asked while it was held ({})", executorId,
        done ? "decommissioning" : "Spark declined");
  }

  /**
   * Lets Spark park a decommission asked while an executor is held, to be re-issued at its release:
   * sets {@code spark.scheduler.maxRetainedUnknownDecommissionExecutors} (0, parking nothing, by default)
   * when decommissioning is on and the key is unset. Called before the scheduler backend exists.
   */
  static void retainDecommissionRequests(SparkContext sc) {
    String key = "spark.scheduler.maxRetainedUnknownDecommissionExecutors";
    if (sc.conf().getBoolean("spark.decommission.enabled", false) && !sc.conf().contains(key)) {
      sc.conf().set(key, "1000");
      LOG.info("Wrangler set {}=1000 so that a decommission asked while an executor is held waits for its release",
          key);
    }
  }
}
