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
import org.apache.spark.TaskContext;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.rpc.RpcEndpointRef;
import org.apache.spark.rpc.RpcEnv;
import org.apache.spark.shuffle.IndexShuffleBlockResolver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Riffle's agent in one executor JVM: runs the merges the driver assigns, reports how they ended,
 * and answers the reader's questions about merged outputs.
 *
 * <p>At start it registers with the driver: its local directories, from which neighbours on the same
 * host read its map outputs in host-level merges, and its {@link MergeInbox}, through which the driver
 * pushes merges to run or cancel, shuffles sealed and merges revoked (nothing polls). Reduce tasks ask
 * for a shuffle's plan of merged outputs; a sealed plan never changes while the map outputs stay the
 * same, so one task per executor, shuffle and map-output epoch fetches it (asking again when the driver
 * says a shuffle sealed) and the others share it.
 */
public final class RiffleExecutor {
  private static final Logger LOG = LoggerFactory.getLogger(RiffleExecutor.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  /**
   * How long a reader waits for word of a seal before asking for the plan again anyway: a safety net,
   * as every seal is pushed to every registered executor.
   */
  private static final long PLAN_RECHECK_MS = 5000;
  private static final String PARTIAL_MERGES = "spark.riffle.read.partialMerges";
  private static volatile RiffleExecutor instance;

  private final PluginContext ctx;
  private final MergerService merger;
  private final PlanWait planWait;
  private final long verifyMaxBytes;
  private final boolean partialMerges;
  private final Map<Integer, Set<Long>> mergedOutputs = new ConcurrentHashMap<>();
  /**
   * Final plans by shuffle and map-output epoch (Spark bumps the epoch when map outputs change). One
   * task per executor asks the driver; the others wait for its answer.
   */
  private final Map<List<Long>, CompletableFuture<ReadPlan>> plans = new ConcurrentHashMap<>();
  private long seenRevocations;
  private RpcEndpointRef inbox;

  private RiffleExecutor(PluginContext ctx, SparkrmConf conf) {
    this.ctx = ctx;
    this.planWait = new PlanWait(PlanWait.Clock.SYSTEM,
        conf.getLong("spark.riffle.bestEffort.timeout") + conf.getLong("spark.riffle.read.planTimeout"), PLAN_RECHECK_MS);
    this.verifyMaxBytes = conf.getLong("spark.riffle.read.verifyMaxBytes");
    this.partialMerges = conf.getBoolean(PARTIAL_MERGES);
    this.merger = new MergerService((int) conf.getLong("spark.riffle.merger.threads"),
        conf.getLong("spark.riffle.merger.memoryBudget"), (int) conf.getLong("spark.riffle.merger.readBufferBytes"),
        (int) conf.getLong("spark.riffle.merger.writeBufferBytes"), RiffleExecutor::resolver,
        new FaultInjection(conf));
  }

  /**
   * Starts the agent of this executor (called by the sparkrm executor plugin, before any task runs):
   * sets up its inbox and registers with the driver. An executor that cannot register merges nothing
   * (the driver leaves its outputs unmerged) but still reads merged outputs.
   */
  public static void start(PluginContext ctx, SparkrmConf conf) {
    RiffleExecutor agent = new RiffleExecutor(ctx, conf);
    instance = agent;
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("executorId", ctx.executorID());
    m.put("localDirs", SparkEnv.get().blockManager().diskBlockManager().localDirsString());
    try {
      RpcEnv rpcEnv = SparkEnv.get().rpcEnv();
      agent.inbox = rpcEnv.setupEndpoint(MergeInbox.NAME + "-" + ctx.executorID(),
          new MergeInbox(rpcEnv, agent::receive));
      ctx.ask(MessageRouter.encodeAttached("riffle.register", m, agent.inbox));
      LOG.info("Riffle merger started on executor {}", ctx.executorID());
    } catch (Exception e) { // PluginContext.ask declares Exception; Spark's RPC may refuse the endpoint
      LOG.warn("Riffle merges nothing on executor {}: it could not register with the driver ({}); its map "
          + "outputs are read unmerged", ctx.executorID(), e.toString());
    }
  }

  /** The agent of this JVM, or {@code null} when Riffle is off (then reads stay vanilla). */
  static RiffleExecutor get() {
    return instance;
  }

  public static void stopAgent() {
    RiffleExecutor agent = instance;
    if (agent == null) return;
    instance = null;
    if (agent.inbox != null) SparkEnv.get().rpcEnv().stop(agent.inbox);
    agent.merger.stop();
  }

  long verifyMaxBytes() {
    return verifyMaxBytes;
  }

  /**
   * Whether a task of {@code context}'s job may use merges partly in its map range: the job's own
   * setting ({@code shuffle_merge.job_settings(partial_merges=...)}, or the SQL session's value, which
   * Spark SQL copies into every query's local properties), else the application's.
   */
  boolean partialMerges(TaskContext context) {
    String value = context.getLocalProperty(SparkrmConf.jobPrefix() + PARTIAL_MERGES.substring("spark.".length()));
    if (value == null) value = context.getLocalProperty(PARTIAL_MERGES);
    return value == null ? partialMerges : Boolean.parseBoolean(value.trim());
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
        ReadPlan plan = planWait.await(shuffleId, this::fetchPlan);
        mine.complete(plan);
        return plan;
      } catch (RuntimeException e) {
        plans.remove(key, mine);
        mine.completeExceptionally(e);
        throw e;
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

  /** A message the driver pushed to this executor's inbox (see {@link RiffleScheduler#drain}). */
  private void receive(String json) {
    JsonNode message = MessageRouter.parse(json);
    if (message.has("revocations") && message.path("revocations").asLong() != seenRevocations) {
      seenRevocations = message.path("revocations").asLong();
      plans.clear(); // a merge was revoked somewhere: readers ask the driver again
    }
    for (JsonNode m : message.path("merges")) merger.submit(assignment(m), this::report);
    for (JsonNode g : message.path("cancel")) merger.cancel(g.asLong());
    if (message.has("sealed")) planWait.sealAnnounced();
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
    m.put("memoryWaits", o.waitedForMemory() ? 1 : 0);
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
}
