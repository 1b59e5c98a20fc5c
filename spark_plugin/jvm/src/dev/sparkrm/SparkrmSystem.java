package dev.sparkrm;

import dev.sparkrm.conf.SparkrmConf;
import dev.sparkrm.rpc.MessageRouter;
import dev.sparkrm.telemetry.TelemetryStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.PluginContext;

/**
 * A system that runs inside the sparkrm plugin (Riffle, Wrangler). Each registers itself with the core
 * through {@link ServiceLoader}, by a line in {@code META-INF/services/dev.sparkrm.SparkrmSystem} of its own
 * source tree: the core plugins start whatever is registered and name no system, so no arrow points from the
 * core back into a system. An instance serves one side, the driver or an executor.
 */
public interface SparkrmSystem {
  /** What a system's driver side gets to start with: the validated conf, the plugin RPC and telemetry. */
  record DriverContext(SparkContext sc, SparkrmConf conf, MessageRouter router, TelemetryStore telemetry) {}

  /** The boolean key that turns the system on, e.g. {@code spark.riffle.enabled}. */
  String enabledKey();

  /**
   * Starts the driver side (the system is enabled); returns what its executor side needs, merged into the
   * executor plugin's extra conf (empty: nothing to start there).
   */
  Map<String, String> startDriver(DriverContext context);

  /** Once the application id exists (the plugin's {@code registerMetrics}). */
  default void bind(SparkContext sc) {}

  /** Starts the executor side when {@code extraConf} (the driver's answer) says the system runs. */
  void startExecutor(PluginContext ctx, Map<String, String> extraConf);

  /** Stops whichever side this instance started; called once, and also after a start that failed. */
  void stop();

  /** A fresh instance of every registered system, in the jar's registration order. */
  static List<SparkrmSystem> registered() {
    List<SparkrmSystem> systems = new ArrayList<>();
    ServiceLoader.load(SparkrmSystem.class, SparkrmSystem.class.getClassLoader()).forEach(systems::add);
    return systems;
  }
}
