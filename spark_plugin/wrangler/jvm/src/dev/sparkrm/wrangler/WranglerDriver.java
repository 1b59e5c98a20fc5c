package dev.sparkrm.wrangler;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sparkrm.compat.SparkCompat;
import dev.sparkrm.conf.SparkrmConf;
import dev.sparkrm.conf.SparkrmConfigException;
import dev.sparkrm.rpc.MessageRouter;
import dev.sparkrm.telemetry.RecordSchema;
import dev.sparkrm.telemetry.TelemetryStore;
import java.util.Set;
import java.util.function.BiConsumer;
import java.util.function.LongSupplier;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorAdded;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Wrangler in the driver: records the executors' node samples as telemetry {@code node} records and
 * owns the {@link ExecutorHolds}, whose ended holds become {@code wrangler_hold} records, and the
 * {@link FeedbackGuard}, whose refutations become {@code wrangler_guard} records, and the
 * {@link JvmDecisions}, the only place Wrangler decides (Python trains and installs models there), and, with
 * {@code spark.wrangler.hold.waitAware}, the {@link TaskQueue} that prices each hold. Every
 * component that decides by time reads the one clock made here, the system's.
 */
public final class WranglerDriver {
  private static final Logger LOG = LoggerFactory.getLogger(WranglerDriver.class);
  /** Listener-bus queue of the listener that feeds the guard and the safety checks and forgets removed executors. */
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
  private final JvmDecisions decisions;
  private final long intervalMs;

  private WranglerDriver(ExecutorHolds holds, JvmDecisions decisions, long intervalMs) {
    this.holds = holds;
    this.decisions = decisions;
    this.intervalMs = intervalMs;
  }

  /**
   * Registers the record types, the sample handler, the holds and, for a JSON model, the JVM's decisions.
   *
   * @param telemetry the telemetry store, which Wrangler needs
   * @throws SparkrmConfigException when telemetry is off, or the JSON model cannot be read
   */
  public static WranglerDriver start(SparkContext sc, SparkrmConf conf, MessageRouter router, TelemetryStore telemetry) {
    if (telemetry == null) {
      throw new SparkrmConfigException("spark.wrangler.enabled=true needs spark.sparkrm.telemetry.enabled=true "
          + "(node samples and holds are telemetry records). Got spark.sparkrm.telemetry.enabled=false. Set it to "
          + "true, or select the `wrangler` feature, which sets both.");
    }
    LongSupplier clock = System::currentTimeMillis;
    long intervalMs = conf.getLong("spark.wrangler.interval");
    long maxHoldMs = conf.getLong("spark.wrangler.hold.maxDuration");
    FeedbackGuard guard = conf.getBoolean("spark.wrangler.guard.enabled")
        ? new FeedbackGuard(conf.getLong("spark.wrangler.guard.window"), (int) conf.getLong("spark.wrangler.guard.minTasks"),
            conf.getDouble("spark.wrangler.beta"), 2 * maxHoldMs)
        : null;
    HoldSafety.retainDecommissionRequests(sc);
    HoldSafety safety = HoldSafety.of(sc);
    ExecutorHolds holds = new ExecutorHolds(maxHoldMs, intervalMs, guard, safety, h -> telemetry.record(HOLD, h),
        refutationReporter(telemetry, clock), clock);
    TaskQueue queue = conf.getBoolean("spark.wrangler.hold.waitAware")
        ? new TaskQueue(conf.getDouble("spark.wrangler.beta"), guard) : null;
    JvmDecisions decisions = jvmDecisions(conf, holds, queue, intervalMs, clock);
    telemetry.register(NODE);
    telemetry.register(HOLD);
    telemetry.register(GUARD);
    router.on("wrangler.sample", msg -> {
      telemetry.record(NODE, msg);
      decisions.sample(msg);
      return null;
    });
    router.on("wrangler.decommissioning", msg -> holds.decommissioning(msg.path("executorId").asText()));
    int taskCpus = sc.conf().getInt("spark.task.cpus", 1);
    SparkCompat.addListener(sc, new SparkListener() {
      @Override
      public void onExecutorRemoved(SparkListenerExecutorRemoved e) {
        decisions.executorRemoved(e.executorId());
        holds.executorRemoved(e.executorId());
        safety.executorRemoved(e.executorId());
        if (queue != null) queue.executorRemoved(e.executorId());
      }

      @Override
      public void onExecutorAdded(SparkListenerExecutorAdded e) {
        safety.executorAdded(e.executorId(), e.time());
        if (queue != null) queue.executorAdded(e.executorId(), e.executorInfo().totalCores() / taskCpus);
      }

      @Override
      public void onStageSubmitted(SparkListenerStageSubmitted e) {
        if (queue != null) queue.stageSubmitted(stageKey(e.stageInfo().stageId(), e.stageInfo().attemptNumber()), e.stageInfo().numTasks());
      }

      @Override
      public void onStageCompleted(SparkListenerStageCompleted e) {
        if (queue != null) queue.stageCompleted(stageKey(e.stageInfo().stageId(), e.stageInfo().attemptNumber()));
      }

      @Override
      public void onTaskStart(SparkListenerTaskStart e) {
        safety.taskStarted(e.taskInfo().executorId());
        if (queue != null) {
          queue.taskStarted(e.taskInfo().taskId(), e.taskInfo().executorId(), stageKey(e.stageId(), e.stageAttemptId()),
              e.taskInfo().index(), e.taskInfo().launchTime());
        }
      }

      @Override
      public void onTaskEnd(SparkListenerTaskEnd e) {
        safety.taskEnded(e.taskInfo().executorId(), e.taskInfo().finishTime());
        holds.taskEnded(e);
        if (queue != null) queue.taskEnded(e.taskInfo().taskId(), e.taskInfo().successful(), e.taskInfo().duration());
      }
    }, QUEUE);
    ExecutorHolds.activate(holds);
    JvmDecisions.activate(decisions);
    LOG.info("Wrangler on: mode {}, interval {} ms, confidence {}, hold cap {} ms, feedback guard {}, model {}",
        conf.getString("spark.wrangler.mode"), intervalMs, conf.getDouble("spark.wrangler.confidence"), maxHoldMs,
        guard == null ? "off" : "on", decisions.hasModel() ? "from " + conf.getString("spark.wrangler.model.path")
            : "none yet (Python installs one)");
    return new WranglerDriver(holds, decisions, intervalMs);
  }

  /**
   * The decisions, with the JSON model {@code spark.wrangler.model.path} names; without one (unset, or a
   * joblib model, which Python exports and installs) they hold only silent executors until Python installs one.
   */
  private static JvmDecisions jvmDecisions(SparkrmConf conf, ExecutorHolds holds, TaskQueue queue, long intervalMs,
      LongSupplier clock) {
    String path = conf.getString("spark.wrangler.model.path");
    if (path != null && !path.endsWith(".json")) {
      LOG.warn("spark.wrangler.model.path={} is not a JSON model, which the driver JVM scores: unless this application "
          + "starts Wrangler's Python side (spark_plugin.session or spark_plugin.wrangler.start), which exports and "
          + "installs it, only silent executors are held. For spark-submit alone, export it: "
          + "python -m spark_plugin.wrangler export {} --out <model>.json", path, path);
    }
    // a SparkrmConfigException names file, field and fix
    WranglerModel model = path != null && path.endsWith(".json") ? WranglerModel.load(path) : null;
    String workload = conf.getString("spark.wrangler.workload");
    return new JvmDecisions(model, holds, queue, intervalMs, conf.getDouble("spark.wrangler.confidence"),
        conf.getDouble("spark.wrangler.hold.maxShare"), "hint".equals(conf.getString("spark.wrangler.mode")),
        workload == null ? "default" : workload, clock);
  }

  /** Records each guard refutation and logs it: a WARN the first time per executor, INFO after. */
  private static BiConsumer<FeedbackGuard.Verdict, Long> refutationReporter(TelemetryStore telemetry, LongSupplier clock) {
    Set<String> warned = ConcurrentHashMap.newKeySet();
    return (verdict, backoffMs) -> {
      telemetry.record(GUARD, new Refutation(verdict, clock.getAsLong(), backoffMs));
      String message = "Wrangler stops holding executor {} for {} s: its {} task(s) that judge the hold ran at {}x "
          + "their stages' median, the other executors' at {}x (a straggler runs over {}x), so it is not slow and "
          + "holding it cannot help.";
      Object[] args = {verdict.executorId(), backoffMs / 1000, verdict.tasks(),
          String.format("%.2f", verdict.executorMedian()), String.format("%.2f", verdict.othersMedian()),
          verdict.beta()};
      if (warned.add(verdict.executorId())) {
        LOG.warn(message + " If the model keeps flagging executors that are not slow, retrain it on this "
            + "cluster or raise spark.wrangler.confidence.", args);
      } else {
        LOG.info(message, args);
      }
    };
  }

  private static String stageKey(int stageId, int attempt) {
    return stageId + "." + attempt;
  }

  /** The sampling interval executors are told to use. */
  public long intervalMs() {
    return intervalMs;
  }

  /** Binds the holds to the scheduler backend (from the driver plugin's {@code registerMetrics}). */
  public void bind(SparkContext sc) {
    holds.bind(sc);
    holds.startTicking();
    decisions.startTicking();
  }

  public void stop() {
    decisions.stop();
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
