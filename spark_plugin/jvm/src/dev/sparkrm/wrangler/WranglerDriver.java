package dev.sparkrm.wrangler;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sparkrm.compat.SparkCompat;
import dev.sparkrm.conf.SparkrmConf;
import dev.sparkrm.conf.SparkrmConfigException;
import dev.sparkrm.rpc.MessageRouter;
import dev.sparkrm.telemetry.RecordSchema;
import dev.sparkrm.telemetry.TelemetryStore;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Wrangler in the driver: records the executors' node samples as telemetry {@code node} records and
 * owns the {@link ExecutorHolds}, whose ended holds become {@code wrangler_hold} records. The
 * predictor (models and policy) runs in Python and reads both through telemetry.
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
    router.on("wrangler.sample", msg -> {
      telemetry.record(NODE, msg);
      return null;
    });
    ExecutorHolds holds = new ExecutorHolds(conf.getLong("spark.wrangler.hold.maxDuration"), intervalMs,
        h -> telemetry.record(HOLD, h));
    SparkCompat.addListener(sc, new SparkListener() {
      @Override
      public void onExecutorRemoved(SparkListenerExecutorRemoved e) {
        holds.executorRemoved(e.executorId());
      }
    }, QUEUE);
    ExecutorHolds.activate(holds);
    LOG.info("Wrangler on: mode {}, interval {} ms, confidence {}, hold cap {} ms", conf.getString("spark.wrangler.mode"),
        intervalMs, conf.getDouble("spark.wrangler.confidence"), conf.getLong("spark.wrangler.hold.maxDuration"));
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
