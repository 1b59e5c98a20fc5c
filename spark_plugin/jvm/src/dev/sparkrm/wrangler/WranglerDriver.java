package dev.sparkrm.wrangler;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sparkrm.compat.SparkCompat;
import dev.sparkrm.conf.SparkrmConf;
import dev.sparkrm.conf.SparkrmConfigException;
import dev.sparkrm.rpc.MessageRouter;
import dev.sparkrm.telemetry.RecordSchema;
import dev.sparkrm.telemetry.TelemetryStore;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Wrangler in the driver: records the executors' node samples as telemetry {@code node} records and
 * owns the {@link ExecutorHolds}, whose ended holds become {@code wrangler_hold} records, and the
 * {@link FeedbackGuard}, whose refutations become {@code wrangler_guard} records. The predictor (models
 * and policy) runs in Python and reads them through telemetry.
 */
public final class WranglerDriver {
  private static final Logger LOG = LoggerFactory.getLogger(WranglerDriver.class);
  /** Listener-bus queue of the listener that forgets holds of removed executors. */
  static final String QUEUE = "sparkrm-wrangler";

  static final RecordSchema<JsonNode> NODE = nodeSchema();
  static final RecordSchema<ExecutorHolds.Hold> HOLD = new RecordSchema<ExecutorHolds.Hold>("wrangler_hold")
      .field("executorId", "string", h -> h.executorId)
      .field("startTime", "int", h -> h.startTime)
      .field("endTime", "int", h -> h.endTime)
      .field("durationMs", "int", h -> h.endTime - h.startTime)
      .field("endReason", "string", h -> h.endReason)
      .field("confidence", "double", h -> h.confidence);
  static final RecordSchema<Refutation> GUARD = new RecordSchema<Refutation>("wrangler_guard")
      .field("executorId", "string", r -> r.verdict.executorId())
      .field("time", "int", r -> r.time)
      .field("tasks", "int", r -> (long) r.verdict.tasks())
      .field("executorMedian", "double", r -> r.verdict.executorMedian())
      .field("othersMedian", "double", r -> r.verdict.othersMedian())
      .field("backoffMs", "int", r -> r.backoffMs);

  /** A guard verdict that stopped holds of an executor, for its telemetry record. */
  record Refutation(FeedbackGuard.Verdict verdict, long time, long backoffMs) {}

  private final ExecutorHolds holds;
  private final long intervalMs;

  private WranglerDriver(ExecutorHolds holds, long intervalMs) {
    this.holds = holds;
    this.intervalMs = intervalMs;
  }

  /**
   * Registers the record types, the sample handler and the holds.
   *
   * @param telemetry the telemetry store, which Wrangler needs
   * @throws SparkrmConfigException when telemetry is off
   */
  public static WranglerDriver start(SparkContext sc, SparkrmConf conf, MessageRouter router, TelemetryStore telemetry) {
    if (telemetry == null) {
      throw new SparkrmConfigException("spark.wrangler.enabled=true needs spark.sparkrm.telemetry.enabled=true "
          + "(node samples and holds are telemetry records). Got spark.sparkrm.telemetry.enabled=false. Set it to "
          + "true, or select the `wrangler` feature, which sets both.");
    }
    long intervalMs = conf.getLong("spark.wrangler.interval");
    telemetry.register(NODE);
    telemetry.register(HOLD);
    telemetry.register(GUARD);
    router.on("wrangler.sample", msg -> {
      telemetry.record(NODE, msg);
      return null;
    });
    long maxHoldMs = conf.getLong("spark.wrangler.hold.maxDuration");
    FeedbackGuard guard = conf.getBoolean("spark.wrangler.guard.enabled")
        ? new FeedbackGuard(conf.getLong("spark.wrangler.guard.window"), (int) conf.getLong("spark.wrangler.guard.minTasks"),
            2 * maxHoldMs)
        : null;
    Set<String> warned = ConcurrentHashMap.newKeySet();
    ExecutorHolds holds = new ExecutorHolds(maxHoldMs, intervalMs, guard, h -> telemetry.record(HOLD, h),
        (verdict, backoffMs) -> {
          telemetry.record(GUARD, new Refutation(verdict, System.currentTimeMillis(), backoffMs));
          String message = "Wrangler stops holding executor {} for {} s: its last {} tasks ran at {}x their stages' "
              + "median, the other executors' at {}x, so it is not slow and holding it cannot help.";
          Object[] args = {verdict.executorId(), backoffMs / 1000, verdict.tasks(),
              String.format("%.2f", verdict.executorMedian()), String.format("%.2f", verdict.othersMedian())};
          if (warned.add(verdict.executorId())) {
            LOG.warn(message + " If the model keeps flagging executors that are not slow, retrain it on this "
                + "cluster or raise spark.wrangler.confidence.", args);
          } else {
            LOG.info(message, args);
          }
        });
    SparkCompat.addListener(sc, new SparkListener() {
      @Override
      public void onExecutorRemoved(SparkListenerExecutorRemoved e) {
        holds.executorRemoved(e.executorId());
      }

      @Override
      public void onTaskEnd(SparkListenerTaskEnd e) {
        if (guard != null) guard.taskEnded(e);
      }
    }, QUEUE);
    ExecutorHolds.activate(holds);
    LOG.info("Wrangler on: mode {}, interval {} ms, confidence {}, hold cap {} ms, feedback guard {}",
        conf.getString("spark.wrangler.mode"), intervalMs, conf.getDouble("spark.wrangler.confidence"), maxHoldMs,
        guard == null ? "off" : "on");
    return new WranglerDriver(holds, intervalMs);
  }

  /** The sampling interval executors are told to use. */
  public long intervalMs() {
    return intervalMs;
  }

  /** Binds the holds to the scheduler backend (from the driver plugin's {@code registerMetrics}). */
  public void bind(SparkContext sc) {
    holds.bind(sc.schedulerBackend());
  }

  public void stop() {
    holds.stop();
  }

  private static RecordSchema<JsonNode> nodeSchema() {
    RecordSchema<JsonNode> s = new RecordSchema<JsonNode>("node")
        .field("executorId", "string", n -> n.path("executorId").asText(null))
        .field("time", "int", n -> n.path("time").asLong())
        .field("intervalMs", "int", n -> n.path("intervalMs").asLong());
    for (String f : NodeCounters.FIELDS) {
      s.field(f, "double", n -> n.path(f).isNumber() ? n.path(f).asDouble() : null);
    }
    return s;
  }
}
