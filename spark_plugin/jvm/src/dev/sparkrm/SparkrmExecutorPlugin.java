package dev.sparkrm;

import dev.sparkrm.conf.SparkrmConf;
import dev.sparkrm.riffle.RiffleExecutor;
import dev.sparkrm.rpc.MessageRouter;
import dev.sparkrm.wrangler.NodeSampler;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Executor side of {@link SparkrmPlugin}: registers the executor (id and process id) with the
 * driver over the plugin RPC when telemetry is on, so that it can map executors to processes, and
 * starts Riffle's merger when the driver runs Riffle and Wrangler's node sampler when it runs Wrangler.
 *
 * <p>An exception escaping an executor plugin's {@code init} makes Spark kill the executor, and
 * the worker then restarts it forever; so nothing here may throw. (Note that
 * {@code PluginContext.hostname()} throws on executors in Spark 4.1: their RPC environment has no
 * address. The driver learns the host from the executor-added event instead.)
 */
public final class SparkrmExecutorPlugin implements ExecutorPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(SparkrmExecutorPlugin.class);

  @Override
  public void init(PluginContext ctx, Map<String, String> extraConf) {
    try {
      if ("true".equals(extraConf.get(SparkrmDriverPlugin.REGISTER_EXECUTORS))) register(ctx);
      if ("true".equals(extraConf.get(SparkrmDriverPlugin.START_RIFFLE))) {
        RiffleExecutor.start(ctx, SparkrmConf.validate(ctx.conf()));
      }
      String samplingMs = extraConf.get(NodeSampler.INTERVAL_CONF);
      if (samplingMs != null) NodeSampler.start(ctx, Long.parseLong(samplingMs));
    } catch (RuntimeException e) {
      LOG.warn("sparkrm executor plugin could not start; this executor runs without it", e);
    }
  }

  @Override
  public void shutdown() {
    RiffleExecutor.stopAgent();
    NodeSampler.stopSampler();
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
