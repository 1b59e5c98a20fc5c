package dev.sparkrm.wrangler;

import dev.sparkrm.rpc.MessageRouter;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.api.plugin.PluginContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Wrangler's agent in one executor: every interval it reads the node counters and sends the sample
 * to the driver ({@code wrangler.sample} over the plugin RPC, fire and forget), which records it as a
 * telemetry {@code node} record.
 *
 * <p>A "node" is this executor: on {@code local-cluster} every executor shares one host, and each one
 * reports the host's counters together with its own process, cgroup and JVM counters, which is what
 * tells a throttled executor from its neighbours. A failing reading is logged once and skipped.
 */
public final class NodeSampler {
  private static final Logger LOG = LoggerFactory.getLogger(NodeSampler.class);
  /** Extra executor conf carrying the sampling interval in milliseconds (set by the driver plugin). */
  public static final String INTERVAL_CONF = "sparkrm.wrangler.intervalMs";
  private static volatile NodeSampler instance;

  private final PluginContext ctx;
  private final long intervalMs;
  private final NodeCounters counters = new NodeCounters();
  private final Thread thread;
  private volatile boolean running = true;
  private long failures;

  private NodeSampler(PluginContext ctx, long intervalMs) {
    this.ctx = ctx;
    this.intervalMs = intervalMs;
    this.thread = new Thread(this::loop, "wrangler-sampler");
    this.thread.setDaemon(true);
  }

  /** Starts sampling in this executor (called by the sparkrm executor plugin). */
  public static void start(PluginContext ctx, long intervalMs) {
    NodeSampler sampler = new NodeSampler(ctx, intervalMs);
    instance = sampler;
    sampler.thread.start();
    DecommissionNotice.register(ctx);
    LOG.info("Wrangler node sampler started on executor {} every {} ms", ctx.executorID(), intervalMs);
  }

  /** Stops this JVM's sampler, if any; safe to call twice. */
  public static void stopSampler() {
    NodeSampler sampler = instance;
    instance = null;
    if (sampler != null) {
      sampler.running = false;
      sampler.thread.interrupt();
    }
  }

  private void loop() {
    NodeCounters.Reading prev = null;
    long next = System.nanoTime();
    while (running) {
      try {
        NodeCounters.Reading cur = counters.read();
        if (prev != null) send(prev, cur);
        prev = cur;
      } catch (RuntimeException e) {
        if (failures++ == 0) LOG.warn("Wrangler could not sample node counters; further failures are only counted", e);
      }
      next += intervalMs * 1_000_000L;
      long sleepMs = (next - System.nanoTime()) / 1_000_000L;
      if (sleepMs < 0) { // fell behind (a long GC pause): restart the schedule from now
        next = System.nanoTime();
        continue;
      }
      try {
        Thread.sleep(sleepMs);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  private void send(NodeCounters.Reading prev, NodeCounters.Reading cur) {
    Map<String, Object> msg = new LinkedHashMap<>();
    msg.put("executorId", ctx.executorID());
    msg.put("time", cur.wallMs);
    msg.put("intervalMs", (cur.monoNs - prev.monoNs) / 1_000_000L);
    msg.putAll(NodeCounters.sample(prev, cur));
    try {
      ctx.send(MessageRouter.encode("wrangler.sample", msg));
    } catch (java.io.IOException | RuntimeException e) {
      if (failures++ == 0) LOG.warn("Wrangler could not send a node sample to the driver: {}", e.toString());
    }
  }
}
