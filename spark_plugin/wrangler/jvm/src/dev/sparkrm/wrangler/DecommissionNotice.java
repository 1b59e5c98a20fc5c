package dev.sparkrm.wrangler;

import dev.sparkrm.compat.SparkCompat;
import dev.sparkrm.rpc.MessageRouter;
import java.util.Map;
import org.apache.spark.api.plugin.PluginContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells the driver when this executor is asked to decommission by a signal (a spot preemption, a node
 * drain), so that a Wrangler hold gives way.
 *
 * <p>On the decommission signal Spark's executor asks the driver to decommission it; the driver refuses
 * an executor it counts inactive, which a held executor is, and the executor then escalates the signal
 * and dies instead of leaving gracefully. This action runs on the same signal (Spark runs every action
 * registered for it) and asks the driver to end the hold ({@code wrangler.decommissioning}); the driver
 * then re-issues the refused decommission, which reaches this executor as Spark's own request. It answers
 * "handled" only when Spark now decommissions this executor, so an executor Spark refused for its own
 * reasons escalates as before.
 */
final class DecommissionNotice {
  private static final Logger LOG = LoggerFactory.getLogger(DecommissionNotice.class);

  private DecommissionNotice() {}

  /** Registers the action when {@code spark.decommission.enabled} is true in this executor. */
  static void register(PluginContext ctx) {
    if (!ctx.conf().getBoolean("spark.decommission.enabled", false)) return;
    String signal = ctx.conf().get("spark.executor.decommission.signal", "PWR");
    SparkCompat.onSignal(signal, () -> tellDriver(ctx));
  }

  private static boolean tellDriver(PluginContext ctx) {
    try {
      Object reply = ctx.ask(MessageRouter.encode("wrangler.decommissioning", Map.of("executorId", ctx.executorID())));
      return Boolean.TRUE.equals(reply);
    } catch (Exception e) {
      LOG.warn("Wrangler could not tell the driver that executor {} decommissions: {}", ctx.executorID(), e.toString());
      return false;
    }
  }
}
