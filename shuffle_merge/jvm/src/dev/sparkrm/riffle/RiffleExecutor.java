package dev.sparkrm.riffle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sparkrm.conf.SparkrmConf;
import dev.sparkrm.rpc.MessageRouter;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.shuffle.IndexShuffleBlockResolver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Riffle's agent in one executor JVM: runs the merges the driver assigns, reports how they ended,
 * and answers the reader's questions about merged outputs.
 *
 * <p>Spark's plugin RPC only lets executors ask the driver, so a daemon thread polls it for work:
 * every {@code spark.riffle.merge.pollInterval} while the driver has shuffles in progress, ten
 * times less often otherwise. Its first polls tell the driver this executor's local directories,
 * from which neighbours on the same host read its map outputs in host-level merges. Reduce tasks ask for a shuffle's plan of merged outputs; a sealed plan
 * never changes while the map outputs stay the same, so one task per executor, shuffle and
 * map-output epoch fetches it (polling every few milliseconds until it is sealed) and the others
 * share it.
 */
public final class RiffleExecutor {
  private static final Logger LOG = LoggerFactory.getLogger(RiffleExecutor.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final long PLAN_POLL_MS = 5;
  private static volatile RiffleExecutor instance;

  private final PluginContext ctx;
  private final MergerService merger;
  private final long pollIntervalMs;
  private final long planWaitMs;
  private final long verifyMaxBytes;
  private final Map<Integer, Set<Long>> mergedOutputs = new ConcurrentHashMap<>();
  /**
   * Final plans by shuffle and map-output epoch (Spark bumps the epoch when map outputs change). One
   * task per executor asks the driver; the others wait for its answer.
   */
  private final Map<List<Long>, CompletableFuture<ReadPlan>> plans = new ConcurrentHashMap<>();
  private final Thread poller;
  private volatile boolean running = true;
  private long seenRevocations;
  private boolean dirsKnown;

  private RiffleExecutor(PluginContext ctx, SparkrmConf conf) {
    this.ctx = ctx;
    this.pollIntervalMs = conf.getLong("spark.riffle.merge.pollInterval");
    this.planWaitMs = conf.getLong("spark.riffle.bestEffort.timeout") + conf.getLong("spark.riffle.read.planTimeout");
    this.verifyMaxBytes = conf.getLong("spark.riffle.read.verifyMaxBytes");
    this.merger = new MergerService((int) conf.getLong("spark.riffle.merger.threads"),
        conf.getLong("spark.riffle.merger.memoryBudget"), (int) conf.getLong("spark.riffle.merger.readBufferBytes"),
        (int) conf.getLong("spark.riffle.merger.writeBufferBytes"), RiffleExecutor::resolver, new FaultInjection(conf));
    this.poller = new Thread(this::pollLoop, "riffle-poller");
    this.poller.setDaemon(true);
  }

  /** Starts the agent of this executor (called by the sparkrm executor plugin). */
  public static void start(PluginContext ctx, SparkrmConf conf) {
    RiffleExecutor agent = new RiffleExecutor(ctx, conf);
    instance = agent;
    agent.poller.start();
    LOG.info("Riffle merger started on executor {}", ctx.executorID());
  }

  /** The agent of this JVM, or {@code null} when Riffle is off (then reads stay vanilla). */
  static RiffleExecutor get() {
    return instance;
  }

  public static void stopAgent() {
    RiffleExecutor agent = instance;
    if (agent == null) return;
    instance = null;
    agent.running = false;
    agent.poller.interrupt();
    agent.merger.stop();
  }

  long verifyMaxBytes() {
    return verifyMaxBytes;
  }

  String executorId() {
    return ctx.executorID();
  }

  /**
   * The merged outputs of {@code shuffleId} that readers may use, waiting while the driver still
   * collects them (until the best-effort deadline plus a margin; then nothing is merged for us).
   */
  ReadPlan plan(int shuffleId, long epoch) {
    List<Long> key = List.of((long) shuffleId, epoch);
    while (true) {
      CompletableFuture<ReadPlan> mine = new CompletableFuture<>();
      CompletableFuture<ReadPlan> shared = plans.putIfAbsent(key, mine);
      if (shared != null) {
        try {
          return shared.join();
        } catch (CompletionException | CancellationException e) {
          continue; // the task asking for all of us was killed: ask again
        }
      }
      try {
        ReadPlan plan = awaitSealedPlan(shuffleId);
        mine.complete(plan);
        return plan;
      } catch (RuntimeException e) {
        plans.remove(key, mine);
        mine.completeExceptionally(e);
        throw e;
      }
    }
  }

  private ReadPlan awaitSealedPlan(int shuffleId) {
    long deadline = System.currentTimeMillis() + planWaitMs;
    while (true) {
      ReadPlan plan = fetchPlan(shuffleId);
      if (plan.sealed() || !plan.riffle()) return plan;
      if (System.currentTimeMillis() > deadline) {
        LOG.warn("Shuffle {}: the driver did not publish merged outputs within {} ms; reading unmerged",
            shuffleId, planWaitMs);
        return ReadPlan.UNMERGED;
      }
      try {
        Thread.sleep(PLAN_POLL_MS);
      } catch (InterruptedException e) { // the task is being killed
        Thread.currentThread().interrupt();
        throw new IllegalStateException("Interrupted while waiting for the Riffle read plan of shuffle " + shuffleId, e);
      }
    }
  }

  /**
   * Stops handing out merge {@code syntheticMapId} of {@code shuffleId}, which a reader found
   * unusable: it leaves this executor's plans at once, and the driver stops publishing it. Other
   * executors drop their plans when a poll shows that the driver's count of revocations changed.
   */
  void revoke(int shuffleId, long syntheticMapId, String reason) {
    for (Map.Entry<List<Long>, CompletableFuture<ReadPlan>> e : plans.entrySet()) {
      ReadPlan plan = e.getKey().get(0) == shuffleId ? e.getValue().getNow(null) : null;
      if (plan != null) e.setValue(CompletableFuture.completedFuture(plan.without(syntheticMapId)));
    }
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("shuffleId", shuffleId);
    m.put("groupId", MergedBlockFormat.groupIdOf(syntheticMapId));
    m.put("executorId", ctx.executorID());
    m.put("reason", reason);
    try {
      ctx.ask(MessageRouter.encode("riffle.revoke", m));
    } catch (Exception e) { // PluginContext.ask declares Exception; readers still verify every block they use
      LOG.warn("Could not tell the driver that Riffle merge group {} is unusable: {}", m.get("groupId"), e.toString());
    }
  }

  /** Reports one reduce task's reads (fire and forget). */
  void reportRead(Map<String, Object> stats) {
    try {
      ctx.send(MessageRouter.encode("riffle.read", stats));
    } catch (IOException e) {
      LOG.debug("Could not report Riffle read statistics: {}", e.toString());
    }
  }

  /** Deletes this executor's merged outputs of a shuffle Spark no longer needs. */
  void removeShuffle(int shuffleId) {
    Set<Long> ids = mergedOutputs.remove(shuffleId);
    plans.keySet().removeIf(k -> k.get(0) == shuffleId);
    if (ids == null) return;
    IndexShuffleBlockResolver r = resolver();
    for (long id : ids) r.removeDataByMap(shuffleId, id);
  }

  private ReadPlan fetchPlan(int shuffleId) {
    try {
      Map<String, Object> q = new LinkedHashMap<>();
      q.put("shuffleId", shuffleId);
      return ReadPlan.parse(JSON.readTree((String) ctx.ask(MessageRouter.encode("riffle.plan", q))));
    } catch (Exception e) { // PluginContext.ask declares Exception; an unreachable driver means no merges
      LOG.warn("Shuffle {}: cannot get the Riffle read plan ({}); reading unmerged", shuffleId, e.toString());
      return ReadPlan.UNMERGED;
    }
  }

  private void pollLoop() {
    while (running) {
      boolean active = false;
      try {
        Map<String, Object> q = new LinkedHashMap<>();
        q.put("executorId", ctx.executorID());
        q.put("peakBufferBytes", merger.peakBufferBytes());
        if (!dirsKnown) q.put("localDirs", SparkEnv.get().blockManager().diskBlockManager().localDirsString());
        JsonNode reply = JSON.readTree((String) ctx.ask(MessageRouter.encode("riffle.poll", q)));
        dirsKnown = reply.path("dirsKnown").asBoolean();
        active = reply.path("active").asBoolean();
        long revocations = reply.path("revocations").asLong();
        if (revocations != seenRevocations) {
          seenRevocations = revocations;
          plans.clear(); // a merge was revoked somewhere: readers ask the driver again
        }
        for (JsonNode m : reply.path("merges")) merger.submit(assignment(m), this::report);
        for (JsonNode g : reply.path("cancel")) merger.cancel(g.asLong());
      } catch (InterruptedException e) {
        return;
      } catch (Exception e) { // a failed poll is retried next round; the driver times merges out
        if (running) LOG.debug("Riffle poll failed: {}", e.toString());
      }
      sleep(active ? pollIntervalMs : pollIntervalMs * 10);
    }
  }

  private void report(MergeOutcome o) {
    MergeAssignment a = o.assignment();
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("groupId", a.groupId());
    m.put("status", o.status());
    m.put("error", o.error());
    m.put("inputBytes", o.inputBytes());
    m.put("outputBytes", o.outputBytes());
    m.put("queueWaitMs", o.queueWaitMs());
    m.put("mergeMs", o.mergeMs());
    m.put("bufferBytes", o.bufferBytes());
    m.put("peakBufferBytes", merger.peakBufferBytes());
    boolean keep = false;
    try {
      keep = JSON.readTree((String) ctx.ask(MessageRouter.encode("riffle.done", m))).path("keep").asBoolean();
    } catch (Exception e) { // without the driver's word the merge is unusable: readers only use published ones
      LOG.warn("Could not report Riffle merge {}: {}", a.groupId(), e.toString());
    }
    if ("committed".equals(o.status())) {
      if (keep) {
        mergedOutputs.computeIfAbsent(a.shuffleId(), k -> ConcurrentHashMap.newKeySet()).add(a.syntheticMapId());
      } else {
        resolver().removeDataByMap(a.shuffleId(), a.syntheticMapId());
      }
    }
  }

  private static MergeAssignment assignment(JsonNode m) {
    List<MergeInput> inputs = new ArrayList<>();
    JsonNode inputDirs = m.path("inputDirs");
    for (int i = 0; i < m.path("inputs").size(); i++) {
      JsonNode in = m.path("inputs").get(i);
      List<String> dirs = new ArrayList<>();
      for (JsonNode d : inputDirs.path(i)) dirs.add(d.asText());
      inputs.add(new MergeInput(in.get(0).asInt(), in.get(1).asLong(), dirs));
    }
    return new MergeAssignment(m.path("groupId").asLong(), m.path("shuffleId").asInt(),
        m.path("syntheticMapId").asLong(), inputs);
  }

  private static IndexShuffleBlockResolver resolver() {
    return (IndexShuffleBlockResolver) SparkEnv.get().shuffleManager().shuffleBlockResolver();
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
