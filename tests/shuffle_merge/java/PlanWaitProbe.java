package dev.sparkrm.riffle;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;

/**
 * Test access to a reduce task's wait for its sealed plan ({@link PlanWait}) from Python, on a clock the
 * test drives: no thread, no wall time. The driver's answers and what happens during each wait are
 * scripts; the trace says when the reader asked and how long it meant to wait.
 */
public final class PlanWaitProbe {
  private PlanWaitProbe() {}

  /**
   * Runs one wait of {@code waitMs} (recheck every {@code recheckMs}) and returns its trace, e.g.
   * {@code "ask@0 wait:5000 seal ask@0 sealed"}.
   *
   * @param answers the driver's answers in turn, comma-separated: {@code open}, {@code sealed}, or
   *                {@code open+seal} (open, and the seal is pushed right after the answer, before the
   *                reader waits)
   * @param events  what ends each wait in turn, comma-separated: {@code seal} (the driver pushes a seal)
   *                or {@code timeout} (the clock reaches the end of the wait)
   */
  public static String run(long waitMs, long recheckMs, String answers, String events) {
    List<String> trace = new ArrayList<>();
    Deque<String> pending = new ArrayDeque<>(Arrays.asList(events.split(",")));
    PlanWait[] self = new PlanWait[1];
    long[] now = {0};
    PlanWait.Clock clock = new PlanWait.Clock() {
      @Override
      public long nowMs() {
        return now[0];
      }

      @Override
      public void await(Object monitor, long ms) {
        trace.add("wait:" + ms);
        String event = pending.poll();
        if ("seal".equals(event)) {
          trace.add("seal");
          self[0].sealAnnounced();
        } else if ("timeout".equals(event)) {
          now[0] += ms;
        } else {
          throw new IllegalStateException("the script has no event left for a wait of " + ms + " ms: " + trace);
        }
      }
    };
    self[0] = new PlanWait(clock, waitMs, recheckMs);
    Deque<String> replies = new ArrayDeque<>(Arrays.asList(answers.split(",")));
    ReadPlan plan = self[0].await(7, shuffleId -> {
      trace.add("ask@" + now[0]);
      String answer = replies.poll();
      if (answer == null) throw new IllegalStateException("the script has no answer left: " + trace);
      if (answer.equals("open+seal")) self[0].sealAnnounced();
      return new ReadPlan(true, answer.equals("sealed"), List.of());
    });
    trace.add(plan == ReadPlan.UNMERGED ? "unmerged" : plan.sealed() ? "sealed" : "open");
    return String.join(" ", trace);
  }
}
