package dev.sparkrm.wrangler;

import dev.sparkrm.rpc.MessageRouter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SchedulerBackend;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.cluster.CoarseGrainedSchedulerBackend;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Holds back task offers from chosen executors: the mechanism behind Wrangler's "delay" ({@link JvmDecisions}
 * decides and calls {@link #hold}; tests and tools may call it through py4j).
 *
 * <p>Holding an executor puts its id into the scheduler backend's pending-loss-reason set under the
 * backend's monitor, so every offer round skips it: its running tasks finish, pending tasks run on
 * other executors, nothing is killed or duplicated. Releasing removes only ids this class added and
 * revives offers at once. Every hold is capped at {@code maxHoldMs} of continuous holding, after which
 * the executor rests (cannot be held) for {@code restMs}; at least one active executor always stays
 * unheld; a daemon ticker expires holds (an exception in one tick is logged, the next tick runs). Every time
 * read comes from the injected clock, so a test drives expiry, cap, rest and the guard by calling {@link #tick}
 * at the times it chooses, over a plain {@link Offers}. No hold
 * stands where Spark needs the executor ({@link HoldSafety}: a barrier job waiting for slots, a
 * decommission, dynamic allocation's idle timeout). With a {@link FeedbackGuard}, a hold whose executor's
 * running tasks turn out no slower than the others' ends as soon as they do, and the executor is not held
 * again for a back-off, whatever the model says. All hold state is guarded by the backend's monitor
 * ({@link Offers#lock}), the only lock taken, so the lock order Spark uses (task scheduler, then backend) is never reversed. Start and
 * end times are stamped inside that lock, so a task launched in an offer round never falls inside a
 * recorded hold.
 */
public final class ExecutorHolds {
  private static final Logger LOG = LoggerFactory.getLogger(ExecutorHolds.class);
  private static final long TICK_MS = 20;
  /** {@link Hold#witnessesFrom} of a hold the guard does not judge. */
  private static final long NO_WITNESS = Long.MAX_VALUE;
  private static volatile ExecutorHolds active;

  /**
   * One hold: when it began, when it expires unless renewed, and its cap; for the guard, since when the
   * executor's finished tasks judge it (the start for a busy executor, any time in the guard's window for an
   * idle one, {@link #NO_WITNESS} for a silent one) and whether a verdict let it stand.
   */
  static final class Hold {
    final String executorId;
    final long startTime;
    final long capTime;
    final long witnessesFrom;
    long expiryTime;
    double confidence;
    boolean stood;
    long endTime;
    String endReason;

    Hold(String executorId, long startTime, long capTime, long expiryTime, double confidence, long witnessesFrom) {
      this.executorId = executorId;
      this.startTime = startTime;
      this.capTime = capTime;
      this.expiryTime = expiryTime;
      this.confidence = confidence;
      this.witnessesFrom = witnessesFrom;
    }
  }

  private final long maxHoldMs;
  private final long restMs;
  private final FeedbackGuard guard;
  private final HoldSafety safety;
  private final Consumer<Hold> ended;
  private final BiConsumer<FeedbackGuard.Verdict, Long> refuted;
  private final LongSupplier clock;
  private long tickFailures;
  private final Map<String, Hold> holds = new HashMap<>();
  private final Map<String, Long> restUntil = new HashMap<>();
  /** Set by every finished task, cleared by the tick that judges the holds again (peers may have formed). */
  private volatile boolean tasksEnded;
  private ScheduledExecutorService ticker;
  private volatile Offers backend;

  /**
   * @param guard checks holds against the executors' recent task times; {@code null} for none
   * @param safety what Spark needs that a hold would deny
   * @param ended called (outside any lock) with every hold that ended, for its telemetry record
   * @param refuted called with each verdict that stopped holds of an executor, and the back-off in ms
   * @param clock epoch milliseconds: every start, expiry, cap, rest and guard judgement reads it
   */
  ExecutorHolds(long maxHoldMs, long restMs, FeedbackGuard guard, HoldSafety safety, Consumer<Hold> ended,
      BiConsumer<FeedbackGuard.Verdict, Long> refuted, LongSupplier clock) {
    this.maxHoldMs = maxHoldMs;
    this.restMs = restMs;
    this.guard = guard;
    this.safety = safety;
    this.ended = ended;
    this.refuted = refuted;
    this.clock = clock;
  }

  /** Starts the daemon ticker that calls {@link #tick} every {@value #TICK_MS} ms. */
  synchronized void startTicking() {
    if (ticker == null) ticker = ticker("wrangler-holds", this::tick, TICK_MS);
  }

  /** A daemon thread named {@code name} that runs {@code tick} every {@code periodMs}, first after one period. */
  static ScheduledExecutorService ticker(String name, Runnable tick, long periodMs) {
    ScheduledExecutorService ticker = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    });
    ticker.scheduleWithFixedDelay(tick, periodMs, periodMs, TimeUnit.MILLISECONDS);
    return ticker;
  }

  /** The running application's holds, or {@code null} when Wrangler is off. */
  public static ExecutorHolds active() {
    return active;
  }

  static void activate(ExecutorHolds holds) {
    active = holds;
  }

  /**
   * Binds to the scheduler backend, which exists only once SparkContext has created it (the driver
   * plugin calls this from {@code registerMetrics}). Other backends ({@code local[N]}) cannot hold.
   */
  void bind(SparkContext sc) {
    SchedulerBackend schedulerBackend = sc.schedulerBackend();
    if (schedulerBackend instanceof CoarseGrainedSchedulerBackend) {
      backend = Offers.of(sc, (CoarseGrainedSchedulerBackend) schedulerBackend);
      LOG.info("Wrangler holds bound to {}: cap {} ms, rest {} ms", schedulerBackend.getClass().getSimpleName(),
          maxHoldMs, restMs);
    } else {
      LOG.warn("Wrangler cannot hold executors under {} (not a CoarseGrainedSchedulerBackend, e.g. local[N]); "
          + "every hold request is refused, so only hints are logged", schedulerBackend == null ? "no backend"
          : schedulerBackend.getClass().getName());
    }
  }

  /** Binds to {@code offers} (the tests' plain scheduler). */
  void bind(Offers offers) {
    backend = offers;
  }

  /**
   * Holds {@code executorId} for {@code durationMs} from now, or renews its hold (never past the cap).
   *
   * @return {@code held}, {@code renewed}, or why not: {@code unbound}, {@code resting},
   *     {@code inactive} (unknown, lost or held by Spark itself), {@code last-active}, what Spark needs
   *     ({@code barrier}, {@code decommission}, {@code idle}; a hold in force ends),
   *     {@code unconfirmed} (the tasks that ran through the hold in force were not slow; it ends),
   *     {@code distrusted} (within the guard's back-off)
   */
  public String hold(String executorId, long durationMs, double confidence) {
    String refusal = backend == null ? null : guardRefusal(executorId);
    return refusal != null ? refusal : place(executorId, durationMs, confidence, true);
  }

  /**
   * Feeds the guard a finished task (from the listener bus) and ends its executor's hold if the task refutes
   * it; the next tick judges the other holds again, as the task may complete their witnesses' peer groups.
   */
  void taskEnded(SparkListenerTaskEnd e) {
    if (guard == null) return;
    guard.taskEnded(e);
    judgeAfterTask(e.taskInfo().executorId());
  }

  /** After the guard took a finished task of {@code executorId}: ends its hold if refuted, and judges the others next tick. */
  void judgeAfterTask(String executorId) {
    unconfirmed(executorId, clock.getAsLong());
    tasksEnded = true;
  }

  /**
   * Holds or renews {@code executorId} because its node samples stopped: tasks sent to it would wait as
   * long as it stays silent. Past tasks say nothing of a frozen executor, so the guard is not asked.
   *
   * @return as {@link #hold}, never a guard's refusal
   */
  public String holdSilent(String executorId, long durationMs) {
    return place(executorId, durationMs, 1.0, false);
  }

  /** Places or renews a hold; a {@code judged} new hold is checked by the guard, if there is one. */
  private String place(String executorId, long durationMs, double confidence, boolean judged) {
    Offers be = backend;
    if (be == null) return "unbound";
    String objection = safety.objection(executorId, be, clock.getAsLong());
    if (objection != null) {
      end(executorId, objection);
      return objection;
    }
    Hold h;
    synchronized (be.lock()) {
      long now = clock.getAsLong();
      h = holds.get(executorId);
      if (h != null) {
        h.expiryTime = Math.min(h.capTime, now + durationMs);
        h.confidence = confidence;
        return "renewed";
      }
      if (restUntil.getOrDefault(executorId, 0L) > now) return "resting";
      if (!be.isActive(executorId)) return "inactive";
      if (activeUnheld(be) < 2) return "last-active";
      be.withhold(executorId, true);
      long start = clock.getAsLong();
      long witnessesFrom = !judged ? NO_WITNESS : safety.busy(executorId) ? start : Long.MIN_VALUE;
      h = new Hold(executorId, start, start + maxHoldMs, start + Math.min(durationMs, maxHoldMs), confidence,
          witnessesFrom);
      holds.put(executorId, h);
    }
    LOG.info("Wrangler holds executor {} (confidence {}) for up to {} ms", executorId, confidence,
        h.expiryTime - h.startTime);
    return "held";
  }

  /** Ends the hold of {@code executorId} now; {@code false} when it was not held. */
  public boolean release(String executorId) {
    return end(executorId, "released");
  }

  /**
   * Ends the hold of an executor that was told to decommission (by a signal it received), re-issuing the
   * decommission the driver refused while it was held.
   *
   * @return whether Spark now decommissions it (also when the ticker ended the hold first), so that the
   *     executor does not escalate the signal
   */
  public boolean decommissioning(String executorId) {
    end(executorId, "decommission");
    Offers be = backend;
    if (be == null) return false;
    synchronized (be.lock()) {
      return be.decommissioning(executorId);
    }
  }

  /** Ends the hold of an executor Spark removed (Spark has already cleared its set entry). */
  void executorRemoved(String executorId) {
    end(executorId, "removed");
  }

  /** JSON list of the current holds: executorId, startTime, expiryTime, capTime, confidence. */
  public String holdsJson() {
    List<Map<String, Object>> out = new ArrayList<>();
    Offers be = backend;
    if (be == null) return "[]";
    synchronized (be.lock()) {
      for (Hold h : holds.values()) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("executorId", h.executorId);
        m.put("startTime", h.startTime);
        m.put("expiryTime", h.expiryTime);
        m.put("capTime", h.capTime);
        m.put("confidence", h.confidence);
        out.add(m);
      }
    }
    return MessageRouter.toJson(out);
  }

  /** Releases every hold and stops the ticker; safe to call twice. */
  void stop() {
    synchronized (this) {
      if (ticker != null) ticker.shutdownNow();
    }
    Offers be = backend;
    if (be == null) return;
    List<String> ids;
    synchronized (be.lock()) {
      ids = new ArrayList<>(holds.keySet());
    }
    for (String id : ids) end(id, "stopped");
    if (active == this) active = null;
  }

  /** The guard's objection to holding {@code executorId} now, or {@code null} (taken outside the backend's lock). */
  private String guardRefusal(String executorId) {
    if (guard == null) return null;
    long now = clock.getAsLong();
    if (guard.distrustedUntil(executorId) > now) return "distrusted";
    return unconfirmed(executorId, now);
  }

  /**
   * Ends the hold of {@code executorId} if its witnesses refute it: {@code unconfirmed}, else {@code null}
   * (a hold a verdict let stand is marked, so that its end clears the guard's count of refutations).
   */
  private String unconfirmed(String executorId, long now) {
    Offers be = backend;
    if (be == null) return null;
    Hold hold;
    synchronized (be.lock()) {
      hold = holds.get(executorId);
    }
    if (hold == null || hold.witnessesFrom == NO_WITNESS) return null;
    FeedbackGuard.Verdict verdict = guard.verdict(executorId, hold.witnessesFrom, now);
    if (!verdict.refuted()) {
      if (verdict.judged()) {
        synchronized (be.lock()) {
          hold.stood = true;
        }
      }
      return null;
    }
    if (!end(executorId, "unconfirmed")) return null;  // another thread ended it first
    refuted.accept(verdict, guard.distrust(executorId, now));
    return "unconfirmed";
  }

  /** Expires due holds and ends those Spark needs or the guard refutes, at the clock's now. */
  void tick() {
    try {
      expire(clock.getAsLong());
    } catch (RuntimeException e) {
      if (tickFailures++ % 100 == 0) {
        LOG.warn("Wrangler's hold ticker failed ({} so far); holds keep expiring on the next tick", tickFailures, e);
      }
    }
  }

  private void expire(long now) {
    Offers be = backend;
    if (be == null) return;
    List<String> due = new ArrayList<>();
    List<String> held = new ArrayList<>();
    synchronized (be.lock()) {
      for (Hold h : holds.values()) {
        (h.expiryTime <= now ? due : held).add(h.executorId);
      }
    }
    for (String id : due) end(id, null);
    boolean judge = guard != null && tasksEnded;
    tasksEnded = false;
    for (String id : held) {
      String objection = safety.objection(id, be, now);
      if (objection != null) {
        end(id, objection);
      } else if (judge) {
        unconfirmed(id, now);
      }
    }
  }

  /** Ends a hold; a {@code null} reason means it ran out: {@code cap} or {@code expired}. */
  private boolean end(String executorId, String reason) {
    Offers be = backend;
    if (be == null) return false;
    Hold h;
    synchronized (be.lock()) {
      h = holds.remove(executorId);
      if (h == null) return false;
      be.withhold(executorId, false);
      h.endTime = clock.getAsLong();
      h.endReason = reason != null ? reason : h.expiryTime >= h.capTime ? "cap" : "expired";
      if (h.endReason.equals("cap")) restUntil.put(executorId, h.endTime + restMs);
    }
    try {
      be.reviveOffers();
    } catch (RuntimeException e) {
      LOG.warn("Wrangler released executor {} but could not revive offers: {}", executorId, e.toString());
    }
    LOG.info("Wrangler released executor {} after {} ms ({})", executorId, h.endTime - h.startTime, h.endReason);
    if (h.stood && guard != null && !h.endReason.equals("unconfirmed")) guard.stood(executorId);
    safety.afterEnd(executorId, h.endReason, be);
    try {
      ended.accept(h);
    } catch (RuntimeException e) {
      LOG.warn("Wrangler could not record the hold of executor {}: {}", executorId, e.toString());
    }
    return true;
  }

  private static int activeUnheld(Offers be) {
    int n = 0;
    for (String id : be.executorIds()) {
      if (be.isActive(id)) n++;
    }
    return n;
  }
}
