package dev.sparkrm.riffle;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sparkrm.compat.SparkCompat;
import dev.sparkrm.conf.SparkrmConf;
import dev.sparkrm.rpc.MessageRouter;
import dev.sparkrm.telemetry.TelemetryStore;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;
import org.apache.spark.SparkContext;
import org.apache.spark.rpc.RpcEndpointRef;
import scala.Tuple2;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Riffle in the driver: the scheduler, the listener that feeds it, the pusher that hands its work to
 * executors, and the plugin-RPC handlers that executors (registration, merge reports) and reduce tasks
 * (read plans) call.
 */
public final class RiffleDriver {
  private static final Logger LOG = LoggerFactory.getLogger(RiffleDriver.class);
  /** Listener-bus queue of the Riffle listener: merge scheduling never waits behind other listeners. */
  static final String QUEUE = "sparkrm-riffle";
  private static volatile RiffleDriver active;

  private final RiffleScheduler scheduler;
  private final AssignmentPusher pusher;
  private final ShuffleServiceCleaner cleaner;
  private final LongSupplier clock;

  private RiffleDriver(RiffleScheduler scheduler, AssignmentPusher pusher, ShuffleServiceCleaner cleaner,
      LongSupplier clock) {
    this.scheduler = scheduler;
    this.pusher = pusher;
    this.cleaner = cleaner;
    this.clock = clock;
  }

  /** The running application's driver side, or {@code null} (then shuffles stay vanilla). */
  static RiffleDriver active() {
    return active;
  }

  RiffleScheduler scheduler() {
    return scheduler;
  }

  /**
   * Starts Riffle in the driver. The configuration was validated first, so
   * {@code spark.shuffle.manager} is {@link RiffleShuffleManager} (a rule of the key table).
   *
   * @param telemetry where merge and read records go, or {@code null} when telemetry is off
   */
  public static RiffleDriver start(SparkContext sc, SparkrmConf conf, MessageRouter router, TelemetryStore telemetry) {
    return start(sc, conf, router, telemetry, System::currentTimeMillis);
  }

  /**
   * Starts Riffle in the driver with {@code clock} (ms) as the time every decision of the scheduler is
   * taken at: the listener's events, the pusher's deadlines, the executors' reports and readers' asks.
   */
  static RiffleDriver start(SparkContext sc, SparkrmConf conf, MessageRouter router, TelemetryStore telemetry,
      LongSupplier clock) {
    RiffleRecords records = telemetry == null ? null : new RiffleRecords(telemetry);
    ShuffleSettings defaults = ShuffleSettings.from(conf);
    RiffleScheduler scheduler = new RiffleScheduler(defaults, conf.getLong("spark.riffle.merge.timeout"),
        records == null ? RiffleEvents.NONE : records);
    Map<String, String> appConf = new HashMap<>();
    for (Tuple2<String, String> kv : sc.conf().getAllWithPrefix("spark.riffle.")) {
      appConf.put("spark.riffle." + kv._1(), kv._2());
    }
    boolean oldProtocol = sc.conf().getBoolean("spark.shuffle.useOldFetchProtocol", false);
    SparkCompat.addListener(sc, new RiffleListener(scheduler, appConf, oldProtocol, clock), QUEUE);
    AssignmentPusher pusher = new AssignmentPusher(scheduler, clock);
    router.onAttached("riffle.register", (m, inbox) -> {
      if (!(inbox instanceof RpcEndpointRef ref)) {
        throw new IllegalArgumentException("riffle.register needs the executor's inbox endpoint attached");
      }
      pusher.register(m.path("executorId").asText(), strings(m.path("localDirs")), ref::send);
      return json(Map.of("registered", true));
    });
    router.on("riffle.done", m -> json(Map.of("keep", scheduler.mergeEnded(m.path("groupId").asLong(),
        m.path("status").asText(), m.path("error").asText(null), m, clock.getAsLong()))));
    router.on("riffle.plan", m -> json(scheduler.plan(m.path("shuffleId").asInt(), clock.getAsLong())));
    router.on("riffle.revoke", m -> {
      long groupId = m.path("groupId").asLong();
      if (scheduler.revoke(groupId, m.path("reason").asText())) {
        LOG.warn("Riffle: merge group {} of shuffle {} is no longer used: executor {} found it unusable ({})",
            groupId, m.path("shuffleId").asInt(), m.path("executorId").asText(), m.path("reason").asText());
      }
      return json(Map.of("revoked", true));
    });
    router.on("riffle.read", m -> {
      if (records != null) records.read(m);
      return null;
    });
    RiffleDriver driver = new RiffleDriver(scheduler, pusher, new ShuffleServiceCleaner(sc.conf()), clock);
    active = driver;
    LOG.info("Riffle on: {}", defaults);
    return driver;
  }

  /** Spark cleans {@code shuffleId} up: forget it, and delete merged files that outlived their executor. */
  void unregisterShuffle(int shuffleId) {
    cleaner.remove(shuffleId, scheduler.unregisterShuffle(shuffleId, clock.getAsLong()));
  }

  public void stop() {
    pusher.stop();
    if (active == this) active = null;
  }

  /** The strings of a JSON array, or {@code null} when the field is absent. */
  private static List<String> strings(JsonNode array) {
    if (!array.isArray()) return null;
    List<String> out = new ArrayList<>();
    for (JsonNode n : array) out.add(n.asText());
    return out;
  }

  private static String json(Object reply) {
    return MessageRouter.toJson(reply);
  }
}
