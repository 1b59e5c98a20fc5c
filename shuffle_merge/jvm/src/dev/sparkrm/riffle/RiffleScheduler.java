package dev.sparkrm.riffle;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sparkrm.riffle.MergePolicy.Output;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver's merge scheduler (thesis §3.1, §3.3, §3.6-3.8): decides which map outputs each
 * executor merges, hands the merges out, and publishes the merged outputs readers may use.
 *
 * <p>Per shuffle it follows the map stage, with the {@link ShuffleSettings} of the job that ran it.
 * As map tasks succeed (from listener events) it queues their outputs per host (thesis §3.5: one merger
 * per node) or per executor, and issues merges eagerly by the {@link MergePolicy}. A host's merge runs
 * on the executor of that host, among those that wrote its inputs, with the fewest merges in flight;
 * it reads its neighbours' files from their local directories, which every executor reports when it
 * registers. An executor that reported no directories merges alone, one that never registered (so
 * cannot be handed work) leaves its outputs unmerged, and a host whose executors cannot read each
 * other's files falls back to merging per executor (its failed merge's outputs are queued again).
 * When the map stage ends it merges leftovers and then <em>seals</em> the shuffle once every merge
 * has ended, or a fraction {@code bestEffort} of the outputs is merged, or the best-effort deadline
 * has passed; merges still running then are cancelled. Readers wait for the seal and get the
 * committed merges. A merge that fails, times out or is cancelled simply leaves its outputs unmerged.
 *
 * <p>Nothing is sent from here: {@link #drain} says what each executor must be told (merges to run or
 * cancel, shuffles sealed, merges revoked), and the wake-up set with {@link #onWork} fires whenever
 * there is something to drain; {@link #nextDeadline} says when a timeout or seal deadline next
 * needs a drain. All methods are synchronized and take the current time, so the logic is
 * deterministic and can be driven directly in tests.
 */
public final class RiffleScheduler {
  /** The status an executor reports for a host merge that could not read a neighbour's files. */
  static final String UNREADABLE = "unreadable";
  private static final Logger LOG = LoggerFactory.getLogger(RiffleScheduler.class);

  private final ShuffleSettings defaults;
  private final long mergeTimeoutMs;
  private final RiffleEvents events;

  private final Map<Integer, ShuffleState> shuffles = new HashMap<>();
  private final Map<Long, Group> groups = new HashMap<>();
  private final Map<String, ArrayDeque<Group>> toDeliver = new HashMap<>();
  private final Map<String, List<Long>> toCancel = new HashMap<>();
  /** Executors that registered, so can be handed merges and told of seals and revocations. */
  private final Set<String> executors = new HashSet<>();
  /** Each executor's local directories, where its neighbours on the host read its map outputs. */
  private final Map<String, List<String>> localDirs = new HashMap<>();
  private final Set<String> unreadableHosts = new HashSet<>();
  private final List<Integer> sealedSinceDrain = new ArrayList<>();
  private long nextGroupId = 1;
  private long revocations;
  private long revocationsDrained;
  private Runnable wakeUp = () -> {};

  /** A merge and what became of it. */
  static final class Group {
    final long id;
    final ShuffleState shuffle;
    final int generation;
    final String executorId;
    final String scope;
    final List<Output> inputs;
    final long issuedAt;
    String status = "queued"; // queued, running, committed, failed, cancelled; revoked after committed
    String reason;
    long endedAt = -1;
    JsonNode report;

    Group(long id, ShuffleState shuffle, String executorId, String scope, List<Output> inputs, long issuedAt) {
      this.id = id;
      this.shuffle = shuffle;
      this.generation = shuffle.generation;
      this.executorId = executorId;
      this.scope = scope;
      this.inputs = inputs;
      this.issuedAt = issuedAt;
    }

    long syntheticMapId() {
      return MergedBlockFormat.syntheticMapId(id);
    }

    boolean inFlight() {
      return status.equals("queued") || status.equals("running");
    }
  }

  /** One shuffle's merging state; a map-stage (re)submission starts a new generation. */
  static final class ShuffleState {
    final int shuffleId;
    final int partitions;
    final String skipReason;
    ShuffleSettings settings;
    int generation;
    long stageSubmittedAt = -1;
    int outputs;
    int issuedOutputs;
    int committedOutputs;
    boolean stageDone;
    long stageDoneAt = -1;
    boolean sealed;
    long sealedAt = -1;
    String sealReason;
    final Map<String, List<Output>> pending = new LinkedHashMap<>();
    final List<Group> inFlight = new ArrayList<>();

    ShuffleState(int shuffleId, int partitions, String skipReason, ShuffleSettings settings) {
      this.shuffleId = shuffleId;
      this.partitions = partitions;
      this.skipReason = skipReason;
      this.settings = settings;
      this.sealed = true; // nothing to wait for until a map stage is submitted
    }

    /** Whether this shuffle's current map stage is being merged. */
    boolean merging() {
      return skipReason == null && settings.enabled();
    }
  }

  /**
   * @param defaults       the application's settings, for jobs that override none
   * @param mergeTimeoutMs a merge running longer is abandoned
   */
  public RiffleScheduler(ShuffleSettings defaults, long mergeTimeoutMs, RiffleEvents events) {
    this.defaults = defaults;
    this.mergeTimeoutMs = mergeTimeoutMs;
    this.events = events;
  }

  /** Sets what to run (at once, without blocking) whenever there is something for {@link #drain}. */
  public synchronized void onWork(Runnable wakeUp) {
    this.wakeUp = wakeUp;
  }

  /**
   * Executor {@code executorId} can now be handed merges; {@code dirs} are its local directories, where
   * neighbours on its host read its map outputs ({@code null} or empty: it merges alone).
   */
  public synchronized void register(String executorId, List<String> dirs) {
    executors.add(executorId);
    if (dirs != null && !dirs.isEmpty()) localDirs.put(executorId, List.copyOf(dirs));
  }

  /** Executor {@code executorId} is gone: nothing more is sent to it (its merges in flight time out). */
  public synchronized void executorRemoved(String executorId) {
    executors.remove(executorId);
    toDeliver.remove(executorId);
    toCancel.remove(executorId);
  }

  /** A new shuffle dependency; {@code skipReason} non-null means Riffle leaves it alone. */
  public synchronized void registerShuffle(int shuffleId, int partitions, String skipReason) {
    shuffles.put(shuffleId, new ShuffleState(shuffleId, partitions, skipReason, defaults));
  }

  /** A merged output left on the disk of an executor that is gone (an external shuffle service serves it). */
  public record Orphan(String executorId, String host, long syntheticMapId) {}

  /**
   * Forgets {@code shuffleId}. Live executors delete their merged files themselves; returns those of
   * executors that are gone, which only an external shuffle service can delete.
   */
  public synchronized List<Orphan> unregisterShuffle(int shuffleId, long nowMs) {
    ShuffleState s = shuffles.remove(shuffleId);
    if (s == null) return List.of();
    cancelInFlight(s, "shuffle unregistered", nowMs);
    List<Orphan> orphans = new ArrayList<>();
    for (Group g : groups.values()) {
      boolean onDisk = g.status.equals("committed") || g.status.equals("revoked");
      if (g.shuffle == s && onDisk && !executors.contains(g.executorId)) {
        String host = g.inputs.stream().filter(o -> o.executorId().equals(g.executorId)).findFirst()
            .map(Output::host).orElse(null);
        orphans.add(new Orphan(g.executorId, host, g.syntheticMapId()));
      }
    }
    groups.values().removeIf(g -> g.shuffle == s);
    return orphans;
  }

  /**
   * A map stage writing {@code shuffleId} starts (again) with {@code tasks} tasks, under the job's
   * {@code settings} ({@code null}: the application's).
   */
  public synchronized void mapStageSubmitted(int shuffleId, int tasks, ShuffleSettings settings, long nowMs) {
    ShuffleState s = shuffles.get(shuffleId);
    if (s == null || s.skipReason != null) return;
    cancelInFlight(s, "map stage resubmitted", nowMs);
    s.settings = settings == null ? defaults : settings;
    s.stageSubmittedAt = nowMs;
    s.generation++;
    s.outputs = s.issuedOutputs = s.committedOutputs = 0;
    s.stageDone = s.sealed = false;
    s.stageDoneAt = s.sealedAt = -1;
    s.sealReason = null;
    s.pending.clear();
  }

  /** A map task of {@code shuffleId} succeeded on {@code executorId} of {@code host}; its output may be merged. */
  public synchronized void mapOutput(int shuffleId, int mapIndex, long mapId, String executorId, String host,
      long bytes, long nowMs) {
    ShuffleState s = shuffles.get(shuffleId);
    if (s == null || !s.merging() || s.sealed) return;
    s.outputs++;
    Output o = new Output(mapIndex, mapId, executorId, host, bytes, s.partitions);
    if (bytes == 0 || !s.settings.policy().admits(o)) return;
    enqueue(s, o, nowMs);
  }

  /** The map stage of {@code shuffleId} ended; on success, merge leftovers and seal when ready. */
  public synchronized void mapStageCompleted(int shuffleId, boolean succeeded, long nowMs) {
    ShuffleState s = shuffles.get(shuffleId);
    if (s == null || s.sealed || !succeeded) return;
    s.stageDone = true;
    s.stageDoneAt = nowMs;
    if (!s.merging()) {
      seal(s, "riffle off for this job", nowMs);
      return;
    }
    issueLeftovers(s, nowMs);
    maybeSeal(s, nowMs);
    if (!s.sealed) wakeUp.run(); // its seal deadline is known now: the drainer's next deadline may be sooner
  }

  /**
   * What to tell each executor now, after timing out merges and sealing shuffles whose deadline passed:
   * {@code merges} to run and merges to {@code cancel} (its own), and for every registered executor the
   * shuffles {@code sealed} since the last drain (reducers waiting for them ask for the plan again) and
   * the count of {@code revocations} when it changed (executors drop their plans). Executors with
   * nothing to hear are left out.
   */
  public synchronized Map<String, Map<String, Object>> drain(long nowMs) {
    expire(nowMs);
    Map<String, Map<String, Object>> out = new LinkedHashMap<>();
    toDeliver.forEach((executorId, queue) -> {
      List<Map<String, Object>> merges = new ArrayList<>();
      for (Group g : queue) {
        g.status = "running";
        merges.add(assignment(g, true));
      }
      out.computeIfAbsent(executorId, k -> new LinkedHashMap<>()).put("merges", merges);
    });
    toDeliver.clear();
    toCancel.forEach((executorId, ids) -> out.computeIfAbsent(executorId, k -> new LinkedHashMap<>())
        .put("cancel", ids));
    toCancel.clear();
    if (!sealedSinceDrain.isEmpty() || revocations != revocationsDrained) {
      for (String executorId : executors) {
        Map<String, Object> m = out.computeIfAbsent(executorId, k -> new LinkedHashMap<>());
        if (!sealedSinceDrain.isEmpty()) m.put("sealed", List.copyOf(sealedSinceDrain));
        if (revocations != revocationsDrained) m.put("revocations", revocations);
      }
      sealedSinceDrain.clear();
      revocationsDrained = revocations;
    }
    return out;
  }

  /** When {@link #drain} next has a merge to time out or a shuffle to seal by its deadline (MAX_VALUE: never). */
  public synchronized long nextDeadline() {
    long next = Long.MAX_VALUE;
    for (ShuffleState s : shuffles.values()) {
      for (Group g : s.inFlight) next = Math.min(next, g.issuedAt + mergeTimeoutMs);
      if (s.stageDone && !s.sealed) next = Math.min(next, s.settings.sealDeadline(s.stageSubmittedAt, s.stageDoneAt));
    }
    return next;
  }

  /**
   * An executor reports how merge {@code groupId} ended ({@code committed}, {@code failed},
   * {@code cancelled}, or {@link #UNREADABLE}: a host merge that could not read a neighbour's files,
   * which is failed and merged again per executor). Returns whether it should keep the merged files:
   * only a merge still wanted is published; a late one (after the seal, cancel or timeout) is deleted.
   */
  public synchronized boolean mergeEnded(long groupId, String status, String error, JsonNode report, long nowMs) {
    Group g = groups.get(groupId);
    if (g == null || !g.inFlight()) return false;
    g.report = report;
    boolean committed = "committed".equals(status);
    boolean unreadable = UNREADABLE.equals(status);
    end(g, committed ? "committed" : "failed".equals(status) || unreadable ? "failed" : "cancelled", error, nowMs);
    if (committed && g.generation == g.shuffle.generation) g.shuffle.committedOutputs += g.inputs.size();
    if (unreadable) mergeApart(g, error, nowMs);
    maybeSeal(g.shuffle, nowMs);
    return committed;
  }

  /**
   * What a reader of {@code shuffleId} may use: whether Riffle applies, whether the merged set is
   * final, and every committed merge (the reader validates each against the registered outputs).
   */
  public synchronized Map<String, Object> plan(int shuffleId, long nowMs) {
    expire(nowMs);
    ShuffleState s = shuffles.get(shuffleId);
    Map<String, Object> reply = new LinkedHashMap<>();
    boolean riffle = s != null && s.merging();
    reply.put("riffle", riffle);
    reply.put("sealed", !riffle || s.sealed);
    List<Map<String, Object>> published = new ArrayList<>();
    if (riffle) {
      for (Group g : groups.values()) {
        if (g.shuffle == s && g.status.equals("committed")) published.add(assignment(g, false));
      }
    }
    reply.put("groups", published);
    return reply;
  }

  /**
   * A reader found committed merge {@code groupId} unusable (corrupt, truncated or lost): it is no
   * longer published, and executors are told to drop their plans. Returns false for an unknown or
   * unpublished group.
   */
  public synchronized boolean revoke(long groupId, String reason) {
    Group g = groups.get(groupId);
    if (g == null || !g.status.equals("committed")) return false;
    g.status = "revoked";
    g.reason = reason;
    revocations++;
    wakeUp.run();
    return true;
  }

  /** Queues {@code o} with the outputs it will be merged with, and issues the merges now ready. */
  private void enqueue(ShuffleState s, Output o, long nowMs) {
    if (!executors.contains(o.executorId())) return; // it could not be handed the merge
    boolean perHost = s.settings.perHost() && o.host() != null && localDirs.containsKey(o.executorId())
        && !unreadableHosts.contains(o.host());
    String key = perHost ? "host " + o.host() : "executor " + o.executorId();
    List<Output> queue = s.pending.computeIfAbsent(key, k -> new ArrayList<>());
    queue.add(o);
    for (List<Output> g : s.settings.policy().readyGroups(queue)) issue(s, key, g, nowMs);
  }

  /** Merges what is left in each queue once the map stage is over (unless the best-effort fraction is reached). */
  private void issueLeftovers(ShuffleState s, long nowMs) {
    if (!s.settings.leftovers()) return;
    for (Map.Entry<String, List<Output>> e : s.pending.entrySet()) {
      if (e.getValue().size() >= 2 && s.issuedOutputs < s.settings.bestEffort() * s.outputs) {
        issue(s, e.getKey(), s.settings.policy().leftoverGroup(e.getValue()), nowMs);
      }
    }
  }

  /**
   * Host merge {@code g} could not read a neighbour's files: its host merges per executor from now on,
   * and, while the map stage's merges are still collected, its outputs are queued again that way.
   */
  private void mergeApart(Group g, String error, long nowMs) {
    String host = g.inputs.get(0).host();
    if (unreadableHosts.add(host)) {
      LOG.warn("Riffle: executors on host {} cannot read each other's shuffle files ({}); they merge their own "
          + "outputs from now on", host, error);
    }
    ShuffleState s = g.shuffle;
    if (s.sealed || g.generation != s.generation) return;
    s.issuedOutputs -= g.inputs.size();
    for (Output o : g.inputs) enqueue(s, o, nowMs);
    if (s.stageDone) issueLeftovers(s, nowMs);
  }

  private void issue(ShuffleState s, String queueKey, List<Output> inputs, long nowMs) {
    String scope = queueKey.startsWith("host ") ? "host" : "executor";
    Group g = new Group(nextGroupId++, s, mergerFor(inputs), scope, inputs, nowMs);
    groups.put(g.id, g);
    s.inFlight.add(g);
    s.issuedOutputs += inputs.size();
    toDeliver.computeIfAbsent(g.executorId, k -> new ArrayDeque<>()).add(g);
    wakeUp.run();
  }

  /** The executor that runs a merge: of those that wrote its inputs, the one with the fewest merges in flight. */
  private String mergerFor(List<Output> inputs) {
    Map<String, Integer> load = new HashMap<>();
    for (Output o : inputs) load.put(o.executorId(), 0);
    for (ShuffleState s : shuffles.values()) {
      for (Group g : s.inFlight) load.computeIfPresent(g.executorId, (k, n) -> n + 1);
    }
    String best = inputs.get(0).executorId();
    for (Output o : inputs) {
      if (load.get(o.executorId()) < load.get(best)) best = o.executorId();
    }
    return best;
  }

  /** Seals {@code s} when its map stage is over and nothing more is worth waiting for. */
  private void maybeSeal(ShuffleState s, long nowMs) {
    if (s.sealed || !s.stageDone) return;
    String reason = null;
    if (s.inFlight.isEmpty()) {
      reason = "all merges ended";
    } else if (s.committedOutputs >= s.settings.bestEffort() * s.outputs) {
      reason = "best-effort fraction reached";
    } else if (nowMs >= s.settings.sealDeadline(s.stageSubmittedAt, s.stageDoneAt)) {
      reason = "best-effort timeout";
    }
    if (reason != null) seal(s, reason, nowMs);
  }

  private void seal(ShuffleState s, String reason, long nowMs) {
    cancelInFlight(s, reason, nowMs);
    s.sealed = true;
    s.sealedAt = nowMs;
    s.sealReason = reason;
    if (s.merging()) sealedSinceDrain.add(s.shuffleId); // readers of the others never wait
    events.shuffleSealed(s);
    wakeUp.run();
  }

  /** Fails merges running longer than the merge timeout, and seals shuffles whose deadline passed. */
  private void expire(long nowMs) {
    for (ShuffleState s : new ArrayList<>(shuffles.values())) {
      for (Group g : new ArrayList<>(s.inFlight)) {
        if (nowMs - g.issuedAt >= mergeTimeoutMs) {
          end(g, "failed", "merge timeout", nowMs);
          requestCancel(g);
        }
      }
      maybeSeal(s, nowMs);
    }
  }

  private void cancelInFlight(ShuffleState s, String reason, long nowMs) {
    for (Group g : new ArrayList<>(s.inFlight)) {
      requestCancel(g);
      end(g, "cancelled", reason, nowMs);
    }
  }

  private void requestCancel(Group g) {
    ArrayDeque<Group> queue = toDeliver.get(g.executorId);
    if (queue != null && queue.remove(g)) return; // never delivered: nothing to stop
    if (!executors.contains(g.executorId)) return; // gone: nothing to stop
    toCancel.computeIfAbsent(g.executorId, k -> new ArrayList<>()).add(g.id);
    wakeUp.run();
  }

  private void end(Group g, String status, String reason, long nowMs) {
    g.status = status;
    g.reason = reason;
    g.endedAt = nowMs;
    g.shuffle.inFlight.remove(g);
    events.mergeEnded(g);
  }

  /**
   * A merge as executors and readers see it: its inputs ([map index, map id]) and the executor that
   * merges them. For the merger ({@code withDirs}) each input also comes with the local directories
   * to read it from: empty for its own outputs, its neighbour's for the others.
   */
  private Map<String, Object> assignment(Group g, boolean withDirs) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("groupId", g.id);
    m.put("shuffleId", g.shuffle.shuffleId);
    m.put("syntheticMapId", g.syntheticMapId());
    m.put("merger", g.executorId);
    List<long[]> inputs = new ArrayList<>();
    List<List<String>> dirs = new ArrayList<>();
    for (Output o : g.inputs) {
      inputs.add(new long[] {o.mapIndex(), o.mapId()});
      dirs.add(o.executorId().equals(g.executorId) ? List.of() : localDirs.getOrDefault(o.executorId(), List.of()));
    }
    m.put("inputs", inputs);
    if (withDirs) m.put("inputDirs", dirs);
    return m;
  }
}
