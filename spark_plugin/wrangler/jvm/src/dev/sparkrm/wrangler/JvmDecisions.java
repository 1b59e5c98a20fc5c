package dev.sparkrm.wrangler;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Wrangler's decisions in the driver JVM, for a model given as JSON in {@code spark.wrangler.model.path}:
 * what the Python loop ({@code spark_plugin/wrangler/loop.py}) does, without a Python driver.
 *
 * <p>Every interval: each executor's newest node sample is scored if it is fresh (at most two intervals
 * old); an executor whose newest sample is three intervals (at least 3 s) older than the newest sample of
 * any executor is silent and counts as flagged with confidence 1 (measured against the other executors,
 * so a late feed or a paused driver silences no one). {@link #choose} then applies the scheduling rule of
 * {@code spark_plugin.wrangler.policy.choose_holds}; the chosen executors are held for two intervals
 * (renewed while chosen; the {@link FeedbackGuard} and the cap have the last word in
 * {@link ExecutorHolds}) or, in hint mode, logged. Executors this loop held and no longer chooses are
 * released at once.
 */
public final class JvmDecisions {
  private static final Logger LOG = LoggerFactory.getLogger(JvmDecisions.class);
  static final int SILENT_INTERVALS = 3;
  static final long SILENT_MIN_MS = 3000;

  private final WranglerModel model;
  private final ExecutorHolds holds;
  private final long intervalMs;
  private final double p;
  private final boolean hint;
  private final String workload;
  private final Map<String, JsonNode> latest = new ConcurrentHashMap<>();
  private final Set<String> held = new HashSet<>();
  private final ScheduledExecutorService ticker;
  private long tickFailures;

  JvmDecisions(WranglerModel model, ExecutorHolds holds, long intervalMs, double p, boolean hint, String workload) {
    this.model = model;
    this.holds = holds;
    this.intervalMs = intervalMs;
    this.p = p;
    this.hint = hint;
    this.workload = workload;
    this.ticker = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "wrangler-decisions");
      t.setDaemon(true);
      return t;
    });
  }

  /** Keeps an executor's newest node sample (from the RPC handler). */
  void sample(JsonNode sample) {
    latest.put(sample.path("executorId").asText(), sample);
  }

  void executorRemoved(String executorId) {
    latest.remove(executorId);
  }

  void start() {
    ticker.scheduleWithFixedDelay(this::tick, intervalMs, intervalMs, TimeUnit.MILLISECONDS);
  }

  void stop() {
    ticker.shutdownNow();
  }

  /**
   * The scheduling rule: executors whose score is positive and confidence above {@code p}, most confident
   * first (ties by id), never more than {@code live - 1}.
   *
   * @param predictions executor id to {@code {score, confidence}}
   */
  public static List<String> choose(Map<String, double[]> predictions, double p, int live) {
    List<String> flagged = new ArrayList<>();
    predictions.forEach((id, sc) -> {
      if (sc[0] > 0 && sc[1] > p) flagged.add(id);
    });
    flagged.sort(Comparator.comparingDouble((String id) -> -predictions.get(id)[1]).thenComparing(id -> id));
    return flagged.subList(0, Math.min(flagged.size(), Math.max(0, live - 1)));
  }

  private void tick() {
    try {
      decide(System.currentTimeMillis());
    } catch (RuntimeException e) {
      if (tickFailures++ % 100 == 0) LOG.warn("Wrangler's decision tick failed ({} so far)", tickFailures, e);
    }
  }

  private void decide(long now) {
    long silentMs = Math.max(SILENT_INTERVALS * intervalMs, SILENT_MIN_MS);
    Map<String, double[]> predictions = new ConcurrentHashMap<>();
    Set<String> silent = new HashSet<>();
    long newest = latest.values().stream().mapToLong(s -> s.path("time").asLong()).max().orElse(now);
    latest.forEach((id, sample) -> {
      long time = sample.path("time").asLong();
      if (newest - time > silentMs) {
        silent.add(id);
        predictions.put(id, new double[] {Double.POSITIVE_INFINITY, 1.0});
      } else if (now - time <= 2 * intervalMs) {
        predictions.put(id, model.predict(sample, id, workload));
      }
    });
    List<String> chosen = choose(predictions, p, latest.size());
    for (String id : chosen) {
      double confidence = predictions.get(id)[1];
      if (hint) {
        LOG.info("Wrangler would delay executor {} ({}: confidence {} > p {})", id,
            silent.contains(id) ? "silent" : "model", confidence, p);
        continue;
      }
      String action = silent.contains(id) ? holds.holdSilent(id, 2 * intervalMs) : holds.hold(id, 2 * intervalMs, confidence);
      if (action.equals("held") || action.equals("renewed")) held.add(id);
      else held.remove(id);
    }
    for (String id : new ArrayList<>(held)) {
      if (!chosen.contains(id)) {
        holds.release(id);
        held.remove(id);
      }
    }
  }
}
