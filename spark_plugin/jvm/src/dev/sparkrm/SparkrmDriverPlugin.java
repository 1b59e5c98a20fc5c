package dev.sparkrm;

import dev.sparkrm.compat.SparkCompat;
import dev.sparkrm.conf.SparkrmConf;
import dev.sparkrm.conf.SparkrmConfigException;
import dev.sparkrm.conf.StartRefusal;
import dev.sparkrm.rpc.MessageRouter;
import dev.sparkrm.telemetry.TelemetryDriver;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
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
 * ({@link StartRefusal}). Telemetry is the core's; every other system is whatever registered itself
 * ({@link SparkrmSystem}), started when its key enables it.
 */
public final class SparkrmDriverPlugin implements DriverPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(SparkrmDriverPlugin.class);
  /** Key of the extra conf that tells executors to register (see {@link SparkrmExecutorPlugin}). */
  static final String REGISTER_EXECUTORS = "sparkrm.registerExecutors";

  private final MessageRouter router = new MessageRouter();
  private final List<SparkrmSystem> started = new ArrayList<>();
  private TelemetryDriver telemetry;
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
    var context = new SparkrmSystem.DriverContext(sc, conf, router, telemetry == null ? null : telemetry.store());
    for (SparkrmSystem system : SparkrmSystem.registered()) {
      if (!conf.getBoolean(system.enabledKey())) continue;
      started.add(system);
      executorConf.putAll(system.startDriver(context));
    }
    return executorConf;
  }

  @Override
  public void registerMetrics(String appId, PluginContext ctx) {
    if (telemetry != null) telemetry.bind(appId);
    for (SparkrmSystem system : started) system.bind(sc);
  }

  @Override
  public Object receive(Object message) {
    return router.dispatch(message);
  }

  @Override
  public void shutdown() {
    for (int i = started.size() - 1; i >= 0; i--) started.get(i).stop();
    started.clear();
    if (telemetry != null) {
      telemetry.stop();
      telemetry = null;
    }
  }
}
