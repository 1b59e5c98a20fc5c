package dev.sparkrm;

import dev.sparkrm.compat.SparkCompat;
import dev.sparkrm.conf.SparkrmConf;
import dev.sparkrm.conf.SparkrmConfigException;
import dev.sparkrm.conf.StartRefusal;
import dev.sparkrm.riffle.RiffleDriver;
import dev.sparkrm.rpc.MessageRouter;
import dev.sparkrm.telemetry.TelemetryDriver;
import dev.sparkrm.wrangler.NodeSampler;
import dev.sparkrm.wrangler.WranglerDriver;
import java.util.HashMap;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Driver side of {@link SparkrmPlugin}.
 *
 * <p>{@link #init} runs inside the SparkContext constructor before the task scheduler exists, so it
 * only validates and wires; anything that needs the application id binds in {@link #registerMetrics},
 * which Spark calls last. A bad configuration ends the application here with one line per problem
 * ({@link StartRefusal}).
 */
public final class SparkrmDriverPlugin implements DriverPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(SparkrmDriverPlugin.class);
  /** Key of the extra conf that tells executors to register (see {@link SparkrmExecutorPlugin}). */
  static final String REGISTER_EXECUTORS = "sparkrm.registerExecutors";
  /** Key of the extra conf that starts Riffle's merger in executors. */
  static final String START_RIFFLE = "sparkrm.riffle";

  private final MessageRouter router = new MessageRouter();
  private TelemetryDriver telemetry;
  private RiffleDriver riffle;
  private WranglerDriver wrangler;
  private SparkContext sc;

  @Override
  public Map<String, String> init(SparkContext sc, PluginContext ctx) {
    SparkCompat.checkRuntimeVersion();
    this.sc = sc;
    try {
      return start(sc);
    } catch (SparkrmConfigException e) { // say it plainly, and under spark-submit say nothing else
      shutdown();
      throw StartRefusal.refuse(e);
    }
  }

  /** Validates the configuration (keys, rules and the files keys name) and starts the enabled features. */
  private Map<String, String> start(SparkContext sc) {
    SparkrmConf conf = SparkrmConf.validateOnDriver(sc.conf());
    LOG.info("sparkrm {} on Spark {}: configuration in effect {}",
        SparkCompat.buildInfo().getProperty("package.version"), SparkCompat.runtimeSparkVersion(), conf.asMap());
    Map<String, String> executorConf = new HashMap<>();
    if (conf.getBoolean("spark.sparkrm.telemetry.enabled")) {
      telemetry = TelemetryDriver.start(sc, conf, router);
      executorConf.put(REGISTER_EXECUTORS, "true");
    }
    if (conf.getBoolean("spark.riffle.enabled")) {
      riffle = RiffleDriver.start(sc, conf, router, telemetry == null ? null : telemetry.store());
      executorConf.put(START_RIFFLE, "true");
    }
    if (conf.getBoolean("spark.wrangler.enabled")) {
      wrangler = WranglerDriver.start(sc, conf, router, telemetry == null ? null : telemetry.store());
      executorConf.put(NodeSampler.INTERVAL_CONF, Long.toString(wrangler.intervalMs()));
    }
    return executorConf;
  }

  @Override
  public void registerMetrics(String appId, PluginContext ctx) {
    if (telemetry != null) telemetry.bind(appId);
    if (wrangler != null) wrangler.bind(sc);
  }

  @Override
  public Object receive(Object message) {
    return router.dispatch(message);
  }

  @Override
  public void shutdown() {
    if (wrangler != null) {
      wrangler.stop();
      wrangler = null;
    }
    if (riffle != null) {
      riffle.stop();
      riffle = null;
    }
    if (telemetry != null) {
      telemetry.stop();
      telemetry = null;
    }
  }
}
