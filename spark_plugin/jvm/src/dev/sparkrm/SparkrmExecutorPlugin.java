package dev.sparkrm;

import dev.sparkrm.rpc.MessageRouter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Executor side of {@link SparkrmPlugin}: registers the executor (id and process id) with the
 * driver over the plugin RPC when telemetry is on, so that it can map executors to processes, and
 * starts the executor side of every registered system ({@link SparkrmSystem}) the driver runs.
 *
 * <p>An exception escaping an executor plugin's {@code init} makes Spark kill the executor, and
 * the worker then restarts it forever; so nothing here may throw. (Note that
 * {@code PluginContext.hostname()} throws on executors in Spark 4.1: their RPC environment has no
 * address. The driver learns the host from the executor-added event instead.)
 */
public final class SparkrmExecutorPlugin implements ExecutorPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(SparkrmExecutorPlugin.class);

  private final List<SparkrmSystem> systems = SparkrmSystem.registered();

  @Override
  public void init(PluginContext ctx, Map<String, String> extraConf) {
    try {
      if ("true".equals(extraConf.get(SparkrmDriverPlugin.REGISTER_EXECUTORS))) register(ctx);
      for (SparkrmSystem system : systems) system.startExecutor(ctx, extraConf);
    } catch (RuntimeException e) {
      LOG.warn("sparkrm executor plugin could not start; this executor runs without it", e);
    }
  }

  @Override
  public void shutdown() {
    for (SparkrmSystem system : systems) system.stop();
  }

  private static void register(PluginContext ctx) {
    Map<String, Object> hello = new LinkedHashMap<>();
    hello.put("executorId", ctx.executorID());
    hello.put("pid", ProcessHandle.current().pid());
    hello.put("time", System.currentTimeMillis());
    try {
      ctx.ask(MessageRouter.encode("register", hello));
    } catch (Exception e) { // PluginContext.ask declares Exception
      LOG.warn("Executor {} could not register with the sparkrm driver plugin: {}", ctx.executorID(), e.toString());
    }
  }
}
