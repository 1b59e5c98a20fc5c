package dev.sparkrm.riffle;

import java.util.function.IntFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A reduce task's wait for its shuffle's sealed read plan, decided by the clock it is given.
 *
 * <p>The task asks the driver for the plan. While the plan is not sealed it waits for word of a seal
 * (the driver pushes every seal to every registered executor) and then asks again; without word it
 * asks again every {@code recheckMs} anyway (a safety net). Once {@code waitMs} have passed since it
 * first asked, it reads unmerged. Executors run it on the wall clock; tests drive a clock of their
 * own, so that which of the three ends a wait is decided by the test, not by the machine's load.
 */
final class PlanWait {
  private static final Logger LOG = LoggerFactory.getLogger(PlanWait.class);

  /** The time a wait decides by, and the waiting itself. */
  interface Clock {
    long nowMs();

    /** Waits on {@code monitor}, whose lock the caller holds, until it is notified or {@code ms} pass. */
    void await(Object monitor, long ms) throws InterruptedException;

    /** The wall clock and {@link Object#wait(long)}. */
    Clock SYSTEM = new Clock() {
      @Override
      public long nowMs() {
        return System.currentTimeMillis();
      }

      @Override
      public void await(Object monitor, long ms) throws InterruptedException {
        monitor.wait(ms);
      }
    };
  }

  private final Clock clock;
  private final long waitMs;
  private final long recheckMs;
  /** Counts the seals the driver announced; waiting readers wait on this object. */
  private final Object seals = new Object();
  private long sealsAnnounced;

  /**
   * @param waitMs    the longest wait for a sealed plan, from the first ask
   * @param recheckMs the longest wait for word of a seal before asking again anyway
   */
  PlanWait(Clock clock, long waitMs, long recheckMs) {
    this.clock = clock;
    this.waitMs = waitMs;
    this.recheckMs = recheckMs;
  }

  /** The driver announced a seal (of any shuffle): every waiting reader asks again. */
  void sealAnnounced() {
    synchronized (seals) {
      sealsAnnounced++;
      seals.notifyAll();
    }
  }

  /**
   * The plan {@code ask} gives for {@code shuffleId} once it is sealed (or Riffle does not apply), or
   * {@link ReadPlan#UNMERGED} when it is still open after the wait.
   */
  ReadPlan await(int shuffleId, IntFunction<ReadPlan> ask) {
    long deadline = clock.nowMs() + waitMs;
    while (true) {
      long seen;
      synchronized (seals) {
        seen = sealsAnnounced; // read before asking: a seal announced meanwhile is not missed
      }
      ReadPlan plan = ask.apply(shuffleId);
      if (plan.sealed() || !plan.riffle()) return plan;
      long now = clock.nowMs();
      if (now > deadline) {
        LOG.warn("Shuffle {}: the driver did not publish merged outputs within {} ms; reading unmerged",
            shuffleId, waitMs);
        return ReadPlan.UNMERGED;
      }
      awaitSeal(seen, Math.min(deadline + 1, now + recheckMs), shuffleId);
    }
  }

  /** Waits until a seal after the {@code seen}-th is announced, or until {@code until}. */
  private void awaitSeal(long seen, long until, int shuffleId) {
    synchronized (seals) {
      try {
        for (long now = clock.nowMs(); sealsAnnounced == seen && now < until; now = clock.nowMs()) {
          clock.await(seals, until - now);
        }
      } catch (InterruptedException e) { // the task is being killed
        Thread.currentThread().interrupt();
        throw new IllegalStateException("Interrupted while waiting for the Riffle read plan of shuffle " + shuffleId,
            e);
      }
    }
  }
}
