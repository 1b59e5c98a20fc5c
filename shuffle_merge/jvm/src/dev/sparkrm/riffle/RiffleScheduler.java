package dev.sparkrm.riffle;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sparkrm.riffle.MergePolicy.Output;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The driver's merge scheduler (thesis §3.1, §3.3, §3.6-3.8): decides which map outputs each
 * executor merges, hands the merges out, and publishes the merged outputs readers may use.
 *
 * <p>Per shuffle it follows the map stage, with the {@link ShuffleSettings} of the job that ran it.
 * As map tasks succeed (from listener events) it queues their outputs per executor and issues merges
 * eagerly by the {@link MergePolicy}. When the map stage ends it merges leftovers and then
 * <em>seals</em> the shuffle once every merge has ended, or a fraction {@code bestEffort} of the
 * outputs is merged, or the best-effort deadline has passed; merges still running then are
 * cancelled. Readers wait for the seal and get the committed merges. A merge that fails, times out
 * or is cancelled simply leaves its outputs unmerged.
 *
 * <p>All methods are synchronized and take the current time, so the logic is deterministic and
 * can be driven directly in tests. Nothing here blocks: executors and readers poll.
 */
public final class RiffleScheduler {
  private final ShuffleSettings defaults;
  private final long mergeTimeoutMs;
  private final RiffleEvents events;

  private final Map<Integer, ShuffleState> shuffles = new HashMap<>();
  private final Map<Long, Group> groups = new HashMap<>();
  private final Map<String, ArrayDeque<Group>> toDeliver = new HashMap<>();
  private final Map<String, List<Long>> toCancel = new HashMap<>();
  private long nextGroupId = 1;
  private long revocations;

  /** A merge and what became of it. */
  static final class Group {
    final long id;
    final ShuffleState shuffle;
    final int generation;
    final String executorId;
    final List<Output> inputs;
    final long issuedAt;
    String status = "queued"; // queued, running, committed, failed, cancelled; revoked after committed
    String reason;
    long endedAt = -1;
    JsonNode report;

    Group(long id, ShuffleState shuffle, String executorId, List<Output> inputs, long issuedAt) {
      this.id = id;
      this.shuffle = shuffle;
      this.generation = shuffle.generation;
      this.executorId = executorId;
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

  /** A new shuffle dependency; {@code skipReason} non-null means Riffle leaves it alone. */
  public synchronized void registerShuffle(int shuffleId, int partitions, String skipReason) {
    shuffles.put(shuffleId, new ShuffleState(shuffleId, partitions, skipReason, defaults));
  }

  public synchronized void unregisterShuffle(int shuffleId, long nowMs) {
    ShuffleState s = shuffles.remove(shuffleId);
    if (s == null) return;
    cancelInFlight(s, "shuffle unregistered", nowMs);
    groups.values().removeIf(g -> g.shuffle == s);
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

  /** A map task of {@code shuffleId} succeeded; its output may be merged. */
  public synchronized void mapOutput(int shuffleId, int mapIndex, long mapId, String executorId, long bytes,
      long nowMs) {
    ShuffleState s = shuffles.get(shuffleId);
    if (s == null || !s.merging() || s.sealed) return;
    s.outputs++;
    Output o = new Output(mapIndex, mapId, executorId, bytes, s.partitions);
    MergePolicy policy = s.settings.policy();
    if (bytes == 0 || !policy.admits(o)) return;
    List<Output> queue = s.pending.computeIfAbsent(executorId, k -> new ArrayList<>());
    queue.add(o);
    for (List<Output> g : policy.readyGroups(queue)) issue(s, executorId, g, nowMs);
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
    if (s.settings.leftovers()) {
      for (Map.Entry<String, List<Output>> e : s.pending.entrySet()) {
        if (e.getValue().size() >= 2 && s.issuedOutputs < s.settings.bestEffort() * s.outputs) {
          issue(s, e.getKey(), s.settings.policy().leftoverGroup(e.getValue()), nowMs);
        }
      }
    }
    maybeSeal(s, nowMs);
  }

  /** An executor asks for work: merges to run, merges to cancel, and whether to keep polling fast. */
  public synchronized Map<String, Object> poll(String executorId, long nowMs) {
    expire(nowMs);
    List<Map<String, Object>> merges = new ArrayList<>();
    ArrayDeque<Group> queue = toDeliver.remove(executorId);
    if (queue != null) {
      for (Group g : queue) {
        g.status = "running";
        merges.add(assignment(g));
      }
    }
    Map<String, Object> reply = new LinkedHashMap<>();
    reply.put("active", shuffles.values().stream().anyMatch(s -> !s.sealed));
    reply.put("merges", merges);
    List<Long> cancel = toCancel.remove(executorId);
    reply.put("cancel", cancel == null ? List.of() : cancel);
    reply.put("revocations", revocations);
    return reply;
  }

  /**
   * An executor reports how merge {@code groupId} ended ({@code committed}, {@code failed} or
   * {@code cancelled}). Returns whether it should keep the merged files: only a merge still wanted
   * is published; a late one (after the seal, cancel or timeout) is deleted.
   */
  public synchronized boolean mergeEnded(long groupId, String status, String error, JsonNode report, long nowMs) {
    Group g = groups.get(groupId);
    if (g == null || !g.inFlight()) return false;
    g.report = report;
    boolean committed = "committed".equals(status);
    end(g, committed ? "committed" : "failed".equals(status) ? "failed" : "cancelled", error, nowMs);
    if (committed && g.generation == g.shuffle.generation) g.shuffle.committedOutputs += g.inputs.size();
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
        if (g.shuffle == s && g.status.equals("committed")) published.add(assignment(g));
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
    return true;
  }

  private void issue(ShuffleState s, String executorId, List<Output> inputs, long nowMs) {
    Group g = new Group(nextGroupId++, s, executorId, inputs, nowMs);
    groups.put(g.id, g);
    s.inFlight.add(g);
    s.issuedOutputs += inputs.size();
    toDeliver.computeIfAbsent(executorId, k -> new ArrayDeque<>()).add(g);
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
    events.shuffleSealed(s);
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
    toCancel.computeIfAbsent(g.executorId, k -> new ArrayList<>()).add(g.id);
  }

  private void end(Group g, String status, String reason, long nowMs) {
    g.status = status;
    g.reason = reason;
    g.endedAt = nowMs;
    g.shuffle.inFlight.remove(g);
    events.mergeEnded(g);
  }

  private static Map<String, Object> assignment(Group g) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("groupId", g.id);
    m.put("shuffleId", g.shuffle.shuffleId);
    m.put("syntheticMapId", g.syntheticMapId());
    List<long[]> inputs = new ArrayList<>();
    for (Output o : g.inputs) inputs.add(new long[] {o.mapIndex(), o.mapId()});
    m.put("inputs", inputs);
    return m;
  }
}
