package dev.sparkrm.wrangler;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sparkrm.rpc.MessageRouter;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Wrangler's decisions, made here in the driver JVM and nowhere else. Python trains a model (offline, or
 * online after the warm-up), exports it as JSON and {@link #install}s it; {@code spark.wrangler.model.path}
 * naming a JSON model installs it at start-up, so {@code spark-submit --conf} alone holds. Until a model is
 * installed only silent executors are held.
 *
 * <p>Every interval (a tick at the injected clock's now): each executor's newest node sample is scored if it
 * is fresh (at most two intervals old); an executor whose newest sample is three intervals (at least 3 s)
 * older than the newest sample of any executor is silent and counts as flagged with confidence 1 (measured
 * against the other executors, so a late feed or a paused driver silences no one). {@link #choose} then
 * applies the scheduling rule (at most {@code spark.wrangler.hold.maxShare} of the executors, never all); the
 * chosen executors are held for two intervals (renewed while chosen; the {@link FeedbackGuard} and the cap
 * have the last word in {@link ExecutorHolds}) or, in hint mode, logged. With a {@link TaskQueue}
 * ({@code spark.wrangler.hold.waitAware}), a chosen executor whose hold would make the pending tasks wait longer
 * than the straggle it avoids is not held ({@code waits-longer}); its decision carries both, in ms.
 * Executors this class held and no longer chooses are released at once. Each choice is kept as a decision
 * ({@link #decisionsJson}), which Python reads back.
 */
public final class JvmDecisions {
  private static final Logger LOG = LoggerFactory.getLogger(JvmDecisions.class);
  static final int SILENT_INTERVALS = 3;
  static final long SILENT_MIN_MS = 3000;
  /** Decisions and scoring times kept for Python to read; older ones are dropped first. */
  static final int KEPT = 100_000;
  private static volatile JvmDecisions active;

  private final ExecutorHolds holds;
  private final TaskQueue queue;
  private final long intervalMs;
  private final LongSupplier clock;
  private volatile WranglerModel model;
  private volatile double p;
  private final double maxShare;
  private volatile boolean hint;
  private volatile String workload;
  private volatile boolean paused;
  private final Map<String, JsonNode> latest = new ConcurrentHashMap<>();
  private final Set<String> held = new HashSet<>();
  private final ArrayDeque<Map<String, Object>> decisions = new ArrayDeque<>();
  private final ArrayDeque<Double> predictSeconds = new ArrayDeque<>();
  private long seq;
  private long ticks;
  private long tickFailures;
  private ScheduledExecutorService ticker;

  /**
   * @param model the model to score with, or {@code null} until one is installed
   * @param queue prices each hold against the tasks it makes wait ({@link TaskQueue}); {@code null} to hold
   *     every chosen executor
   * @param maxShare the largest share of the live executors held at once (at least one, never all)
   * @param clock epoch milliseconds: the time each tick decides at
   */
  JvmDecisions(WranglerModel model, ExecutorHolds holds, TaskQueue queue, long intervalMs, double p, double maxShare,
      boolean hint, String workload, LongSupplier clock) {
    this.model = model;
    this.holds = holds;
    this.queue = queue;
    this.intervalMs = intervalMs;
    this.p = p;
    this.maxShare = maxShare;
    this.hint = hint;
    this.workload = workload;
    this.clock = clock;
  }

  /** The running application's decisions, or {@code null} when Wrangler is off. */
  public static JvmDecisions active() {
    return active;
  }

  static void activate(JvmDecisions decisions) {
    active = decisions;
  }

  /** Keeps an executor's newest node sample (from the RPC handler). */
  void sample(JsonNode sample) {
    latest.put(sample.path("executorId").asText(), sample);
  }

  void executorRemoved(String executorId) {
    latest.remove(executorId);
  }

  /** Starts the daemon ticker that decides every interval. */
  synchronized void startTicking() {
    if (ticker == null) ticker = ExecutorHolds.ticker("wrangler-decisions", this::tick, intervalMs);
  }

  synchronized void stop() {
    if (ticker != null) ticker.shutdownNow();
    if (active == this) active = null;
  }

  /**
   * Replaces the model with the JSON model at {@code path} (checked against the schema first).
   *
   * @throws dev.sparkrm.conf.SparkrmConfigException naming the file, the field and the fix
   */
  public void install(String path) {
    model = WranglerModel.load(path);
    LOG.info("Wrangler decides with the model {} ({} counters)", path, model.features().length);
  }

  public boolean hasModel() {
    return model != null;
  }

  /** Overrides mode and threshold of the configuration, and the workload scored; releases this class's holds. */
  public synchronized void configure(boolean hint, double p, String workload) {
    this.hint = hint;
    this.p = p;
    this.workload = workload;
    releaseAll();
  }

  /** Stops deciding and releases this class's holds, until {@link #resume}. */
  public synchronized void pause() {
    paused = true;
    releaseAll();
  }

  public synchronized void resume() {
    paused = false;
  }

  /** Ticks decided so far. */
  public synchronized long ticks() {
    return ticks;
  }

  /**
   * The decisions after sequence number {@code after}, oldest first, as a JSON list: {@code seq}, {@code time},
   * {@code executorId}, {@code score} (null for a silent executor), {@code confidence}, {@code why}
   * ({@code model} or {@code silent}), {@code action} ({@code held}, {@code renewed}, a refusal of
   * {@link ExecutorHolds#hold}, {@code waits-longer}, or {@code hint}) and, when holds are priced,
   * {@code delayMs} and {@code avoidedMs} (null where unknown).
   */
  public synchronized String decisionsJson(long after) {
    List<Map<String, Object>> out = new ArrayList<>();
    for (Map<String, Object> d : decisions) {
      if ((long) d.get("seq") > after) out.add(d);
    }
    return MessageRouter.toJson(out);
  }

  /** Sequence number of the newest decision (0 before any). */
  public synchronized long lastDecision() {
    return seq;
  }

  /** Seconds each tick spent scoring fresh samples with the model, oldest first, as a JSON list. */
  public synchronized String predictSecondsJson() {
    return MessageRouter.toJson(new ArrayList<>(predictSeconds));
  }

  /**
   * The scheduling rule: executors whose score is positive and confidence above {@code p}, most confident
   * first (ties by id), at most {@code maxShare} of the {@code live} executors (at least one) and never all.
   * Why a share: Spark already sends a slow executor fewer tasks, so a hold saves only the tail task that
   * would land there, while every executor held at once takes its slots from every task.
   *
   * @param predictions executor id to {@code {score, confidence}}
   */
  public static List<String> choose(Map<String, double[]> predictions, double p, int live, double maxShare) {
    List<String> flagged = new ArrayList<>();
    predictions.forEach((id, sc) -> {
      if (sc[0] > 0 && sc[1] > p) flagged.add(id);
    });
    flagged.sort(Comparator.comparingDouble((String id) -> -predictions.get(id)[1]).thenComparing(id -> id));
    int most = Math.min(live - 1, Math.max(1, (int) Math.floor(maxShare * live + 1e-9)));
    return flagged.subList(0, Math.min(flagged.size(), Math.max(0, most)));
  }

  private void tick() {
    try {
      decide(clock.getAsLong());
    } catch (RuntimeException e) {
      if (tickFailures++ % 100 == 0) LOG.warn("Wrangler's decision tick failed ({} so far)", tickFailures, e);
    }
  }

  /** One tick at {@code now}: score, choose, hold or hint, release. */
  synchronized void decide(long now) {
    if (paused) return;
    ticks++;
    long silentMs = Math.max(SILENT_INTERVALS * intervalMs, SILENT_MIN_MS);
    Map<String, double[]> predictions = new HashMap<>();
    Set<String> silent = new HashSet<>();
    Map<String, JsonNode> live = new HashMap<>(latest);
    long newest = live.values().stream().mapToLong(s -> s.path("time").asLong()).max().orElse(now);
    WranglerModel m = model;
    long started = System.nanoTime();
    boolean scored = false;
    for (Map.Entry<String, JsonNode> e : live.entrySet()) {
      long time = e.getValue().path("time").asLong();
      if (newest - time > silentMs) {
        silent.add(e.getKey());
        predictions.put(e.getKey(), new double[] {Double.POSITIVE_INFINITY, 1.0});
      } else if (m != null && now - time <= 2 * intervalMs) {
        predictions.put(e.getKey(), m.predict(e.getValue(), e.getKey(), workload));
        scored = true;
      }
    }
    if (scored) keep(predictSeconds, (System.nanoTime() - started) / 1e9);
    List<String> chosen = choose(predictions, p, live.size(), maxShare);
    Set<String> closed = new HashSet<>(held);
    closed.addAll(chosen);
    Set<String> kept = new HashSet<>();
    for (String id : chosen) {
      double[] prediction = predictions.get(id);
      String why = silent.contains(id) ? "silent" : "model";
      TaskQueue.Cost cost = queue == null || silent.contains(id) ? null : queue.holdCost(id, closed, now);
      String action;
      if (cost != null && !cost.worthIt()) {
        action = "waits-longer";
        closed.remove(id);
      } else if (hint) {
        action = "hint";
        LOG.info("Wrangler would delay executor {} ({}: score {}, confidence {} > p {})", id, why, prediction[0],
            prediction[1], p);
      } else {
        action = silent.contains(id) ? holds.holdSilent(id, 2 * intervalMs) : holds.hold(id, 2 * intervalMs, prediction[1]);
        if (action.equals("held") || action.equals("renewed")) {
          held.add(id);
          kept.add(id);
        } else {
          held.remove(id);
        }
      }
      Map<String, Object> d = new LinkedHashMap<>();
      d.put("seq", ++seq);
      d.put("time", now);
      d.put("executorId", id);
      d.put("score", Double.isInfinite(prediction[0]) ? null : prediction[0]);
      d.put("confidence", prediction[1]);
      d.put("why", why);
      d.put("action", action);
      if (cost != null) {
        d.put("delayMs", finite(cost.delayMs()));
        d.put("avoidedMs", finite(cost.avoidedMs()));
      }
      keep(decisions, d);
    }
    for (String id : new ArrayList<>(held)) {
      if (!kept.contains(id)) {
        holds.release(id);
        held.remove(id);
      }
    }
  }

  private void releaseAll() {
    for (String id : held) holds.release(id);
    held.clear();
  }

  private static Double finite(double value) {
    return Double.isFinite(value) ? value : null;
  }

  private static <T> void keep(ArrayDeque<T> kept, T value) {
    kept.addLast(value);
    if (kept.size() > KEPT) kept.removeFirst();
  }
}
