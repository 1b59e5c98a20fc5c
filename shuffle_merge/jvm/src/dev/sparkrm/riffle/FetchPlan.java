package dev.sparkrm.riffle;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.IntStream;
import org.apache.spark.scheduler.MapStatus;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.BlockManagerId;
import org.apache.spark.storage.ShuffleBlockBatchId;
import org.apache.spark.storage.ShuffleBlockId;
import scala.Tuple2;
import scala.Tuple3;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The blocks one reduce task fetches: Spark's own list, with the blocks of valid merged outputs
 * replaced by one block per merged output and reduce partition, fetched from the executor that
 * merged them.
 *
 * <p>A published merge is used only if every map output it contains is, right now, the one Spark
 * has registered for that map index (same map id, on one host, one of them on the merging
 * executor). A task that reads a map-index range (an AQE skew split or local shuffle reader) uses a
 * merge partly in its range when at least two of its outputs, and at least half, are in the range:
 * the merged block is fetched whole and the sub-blocks of outputs outside the range are skipped
 * unread, one read instead of several for at most twice the bytes. This is the correctness anchor:
 * speculative duplicates, recomputed outputs and stale plans fall back to the original files, never
 * to wrong data. The plan also remembers, for each
 * merged block, the original blocks it stands for, so a failed merged block can be replaced.
 */
final class FetchPlan {
  /** A block to fetch and where from, as {@code ShuffleBlockFetcherIterator} takes it. */
  record Block(BlockManagerId location, BlockId id, long size, int mapIndex) {}

  /** A (map output, reduce partition) pair: the unit every block covers exactly once. */
  record Piece(long mapId, int reduceId) {}

  private final Map<BlockManagerId, List<Block>> byLocation;
  /** For each synthetic map id: reduce id to the original blocks it replaces. */
  private final Map<Long, Map<Integer, List<Block>>> replaced;
  private final Map<Long, Integer> mapIndexOf;
  /** For each synthetic map id in use: where it is stored and the merge it is. */
  private final Map<Long, BlockManagerId> mergedLocation;
  private final Map<Long, ReadPlan.Group> mergedGroups;
  /** For each synthetic map id: the map indexes its reader uses (all, unless the task reads a map range). */
  private final Map<Long, Set<Integer>> wanted;
  /** Spark's registered map outputs, whose block sizes say which partitions a merged file holds. */
  private final MapStatus[] statuses;
  /** Every (map index, reduce id) of Spark's own list: what the read must cover exactly once. */
  final Set<List<Integer>> coverage;
  /**
   * The reads stock Spark would issue for this task: one per block, or with batch fetch one per map
   * output and location (its contiguous blocks come as one batch).
   */
  final int vanillaReads;
  final int groupsUsed;
  final int groupsPartial;
  final int groupsRejected;

  private FetchPlan(Map<BlockManagerId, List<Block>> byLocation, Map<Long, Map<Integer, List<Block>>> replaced,
      Map<Long, Integer> mapIndexOf, Map<Long, BlockManagerId> mergedLocation, Map<Long, ReadPlan.Group> mergedGroups,
      Map<Long, Set<Integer>> wanted, MapStatus[] statuses, Set<List<Integer>> coverage, int vanillaReads,
      int groupsUsed, int groupsPartial, int groupsRejected) {
    this.byLocation = byLocation;
    this.replaced = replaced;
    this.mapIndexOf = mapIndexOf;
    this.mergedLocation = mergedLocation;
    this.mergedGroups = mergedGroups;
    this.wanted = wanted;
    this.statuses = statuses;
    this.coverage = coverage;
    this.vanillaReads = vanillaReads;
    this.groupsUsed = groupsUsed;
    this.groupsPartial = groupsPartial;
    this.groupsRejected = groupsRejected;
  }

  /**
   * Rewrites Spark's block list ({@code MapOutputTracker.getMapSizesByExecutorId}) with the valid
   * merged outputs of {@code plan}; with {@code partialMerges}, also those only partly in the task's
   * map range (see {@code spark.riffle.read.partialMerges}).
   */
  static FetchPlan build(int shuffleId,
      scala.collection.Iterator<Tuple2<BlockManagerId, scala.collection.Seq<Tuple3<BlockId, Object, Object>>>> vanilla,
      ReadPlan plan, MapStatus[] statuses, int startMapIndex, int endMapIndex, boolean batchFetch,
      boolean partialMerges) {
    Map<BlockManagerId, List<Block>> original = new LinkedHashMap<>();
    Map<Long, Integer> mapIndexOf = new HashMap<>();
    Set<List<Integer>> coverage = new HashSet<>();
    while (vanilla.hasNext()) {
      Tuple2<BlockManagerId, scala.collection.Seq<Tuple3<BlockId, Object, Object>>> loc = vanilla.next();
      List<Block> blocks = original.computeIfAbsent(loc._1(), k -> new ArrayList<>());
      for (Tuple3<BlockId, Object, Object> b : CollectionConverters.asJava(loc._2())) {
        Block block = new Block(loc._1(), b._1(), ((Number) b._2()).longValue(), ((Number) b._3()).intValue());
        blocks.add(block);
        mapIndexOf.put(((ShuffleBlockId) b._1()).mapId(), block.mapIndex());
        coverage.add(List.of(block.mapIndex(), ((ShuffleBlockId) b._1()).reduceId()));
      }
    }
    int vanillaReads = 0;
    for (List<Block> blocks : original.values()) {
      vanillaReads += batchFetch
          ? (int) blocks.stream().mapToLong(b -> ((ShuffleBlockId) b.id()).mapId()).distinct().count()
          : blocks.size();
    }
    Map<Long, Long> synOfMapId = new HashMap<>();
    Map<Long, ReadPlan.Group> mergedGroups = new HashMap<>();
    Map<Long, BlockManagerId> mergedLocation = new HashMap<>();
    Map<Long, Set<Integer>> wanted = new HashMap<>();
    int used = 0;
    int partial = 0;
    int rejected = 0;
    for (ReadPlan.Group g : plan.groups()) {
      BlockManagerId at = mergedLocation(g, statuses);
      Set<Integer> inRange = new HashSet<>();
      for (MergeInput in : g.inputs()) {
        if (in.mapIndex() >= startMapIndex && in.mapIndex() < endMapIndex) inRange.add(in.mapIndex());
      }
      int n = g.inputs().size();
      boolean partlyUsable = partialMerges && inRange.size() >= 2 && 2 * inRange.size() >= n;
      if (at == null || !(inRange.size() == n || partlyUsable)) {
        rejected++;
        continue;
      }
      for (MergeInput in : g.inputs()) {
        if (inRange.contains(in.mapIndex())) synOfMapId.put(in.mapId(), g.syntheticMapId());
      }
      mergedGroups.put(g.syntheticMapId(), g);
      mergedLocation.put(g.syntheticMapId(), at);
      wanted.put(g.syntheticMapId(), inRange);
      used++;
      if (inRange.size() < n) partial++;
    }
    Map<BlockManagerId, List<Block>> byLocation = new LinkedHashMap<>();
    Map<Long, TreeMap<Integer, List<Block>>> merged = new LinkedHashMap<>();
    for (List<Block> blocks : original.values()) {
      for (Block b : blocks) {
        Long syn = synOfMapId.get(((ShuffleBlockId) b.id()).mapId());
        if (syn == null) {
          byLocation.computeIfAbsent(b.location(), k -> new ArrayList<>()).add(b);
        } else {
          merged.computeIfAbsent(syn, k -> new TreeMap<>())
              .computeIfAbsent(((ShuffleBlockId) b.id()).reduceId(), k -> new ArrayList<>()).add(b);
        }
      }
    }
    Map<Long, Map<Integer, List<Block>>> replaced = new HashMap<>();
    for (Map.Entry<Long, TreeMap<Integer, List<Block>>> m : merged.entrySet()) {
      BlockManagerId at = mergedLocation.get(m.getKey());
      List<Block> out = byLocation.computeIfAbsent(at, k -> new ArrayList<>());
      Set<Integer> read = wanted.get(m.getKey());
      for (Map.Entry<Integer, List<Block>> part : m.getValue().entrySet()) {
        List<MergeInput> inputs = mergedGroups.get(m.getKey()).inputs();
        long size = MergedBlockFormat.headerBytes(inputs.size());
        for (Block b : part.getValue()) size += b.size();
        for (MergeInput in : inputs) { // skipped sub-blocks are fetched too
          if (!read.contains(in.mapIndex())) size += statuses[in.mapIndex()].getSizeForBlock(part.getKey());
        }
        out.add(new Block(at, new ShuffleBlockId(shuffleId, m.getKey(), part.getKey()), size,
            part.getValue().get(0).mapIndex()));
      }
      replaced.put(m.getKey(), new HashMap<>(m.getValue()));
    }
    return new FetchPlan(byLocation, replaced, mapIndexOf, mergedLocation, mergedGroups, wanted, statuses,
        coverage, vanillaReads, used, partial, rejected);
  }

  /**
   * Where group {@code g}'s merged output is read from, or {@code null} when it cannot be used: each
   * input must be the map output registered for its index, all on one host, and one of them on the
   * executor that merged them (the location of the merged file).
   */
  private static BlockManagerId mergedLocation(ReadPlan.Group g, MapStatus[] statuses) {
    if (statuses == null || g.inputs().isEmpty()) return null;
    String host = null;
    BlockManagerId merger = null;
    for (MergeInput in : g.inputs()) {
      int i = in.mapIndex();
      if (i < 0 || i >= statuses.length) return null;
      MapStatus s = statuses[i];
      if (s == null || s.mapId() != in.mapId()) return null;
      if (host == null) {
        host = s.location().host();
      } else if (!host.equals(s.location().host())) {
        return null;
      }
      if (s.location().executorId().equals(g.merger())) merger = s.location();
    }
    return merger;
  }

  /**
   * The plan for the rest of a read after merged outputs {@code bad} failed: blocks already consumed
   * are dropped, and each remaining block of a bad merge becomes the original blocks it stood for
   * that were not read yet ({@code covered} holds the (map index, reduce id) pairs read so far).
   */
  FetchPlan without(Set<Long> bad, Set<Piece> consumed, Set<List<Integer>> covered) {
    Map<BlockManagerId, List<Block>> next = new LinkedHashMap<>();
    for (List<Block> blocks : byLocation.values()) {
      for (Block b : blocks) {
        ShuffleBlockId id = (ShuffleBlockId) b.id();
        if (consumed.contains(new Piece(id.mapId(), id.reduceId()))) continue;
        if (bad.contains(id.mapId())) { // the originals, from the executors that wrote them
          for (Block orig : replaced.get(id.mapId()).get(id.reduceId())) {
            int reduceId = ((ShuffleBlockId) orig.id()).reduceId();
            if (!covered.contains(List.of(orig.mapIndex(), reduceId))) {
              next.computeIfAbsent(orig.location(), k -> new ArrayList<>()).add(orig);
            }
          }
        } else {
          next.computeIfAbsent(b.location(), k -> new ArrayList<>()).add(b);
        }
      }
    }
    return new FetchPlan(next, replaced, mapIndexOf, mergedLocation, mergedGroups, wanted, statuses,
        coverage, vanillaReads, groupsUsed, groupsPartial, groupsRejected);
  }

  /** How many map outputs merged output {@code syntheticMapId} holds. */
  int inputsOf(long syntheticMapId) {
    return mergedGroups.get(syntheticMapId).inputs().size();
  }

  /** Where merged output {@code syntheticMapId} is read from. */
  BlockManagerId locationOf(long syntheticMapId) {
    return mergedLocation.get(syntheticMapId);
  }

  /**
   * The partitions a fetched merged block must contain, ascending: its own, or for a batch those in
   * its range that the merged file holds, the ones some input wrote data for (the merger skips the
   * others; map statuses record empty blocks exactly).
   */
  int[] mergedReduceIds(BlockId fetched) {
    if (fetched instanceof ShuffleBlockId) return new int[] {((ShuffleBlockId) fetched).reduceId()};
    ShuffleBlockBatchId batch = (ShuffleBlockBatchId) fetched;
    List<MergeInput> inputs = mergedGroups.get(batch.mapId()).inputs();
    return IntStream.range(batch.startReduceId(), batch.endReduceId())
        .filter(r -> inputs.stream().anyMatch(in -> statuses[in.mapIndex()].getSizeForBlock(r) > 0))
        .toArray();
  }

  /** Whether this read uses the sub-blocks of map index {@code mapIndex} in merged output {@code syntheticMapId}. */
  boolean wants(long syntheticMapId, int mapIndex) {
    return wanted.get(syntheticMapId).contains(mapIndex);
  }

  /** The original block of map index {@code mapIndex} that merged block ({@code syntheticMapId}, {@code reduceId}) holds. */
  Block original(long syntheticMapId, int mapIndex, int reduceId) {
    for (Block b : replaced.get(syntheticMapId).get(reduceId)) {
      if (b.mapIndex() == mapIndex) return b;
    }
    throw new IllegalStateException("merge " + syntheticMapId + " holds no block of map index " + mapIndex
        + " for partition " + reduceId);
  }

  /** Synthetic map ids of the merged outputs planned from {@code location}. */
  Set<Long> mergedAt(BlockManagerId location) {
    Set<Long> ids = new HashSet<>();
    for (Block b : byLocation.getOrDefault(location, List.of())) {
      long mapId = ((ShuffleBlockId) b.id()).mapId();
      if (MergedBlockFormat.isSynthetic(mapId)) ids.add(mapId);
    }
    return ids;
  }

  /** The map index of an original map output read by this task. */
  int mapIndexOf(long mapId) {
    return mapIndexOf.get(mapId);
  }

  /** The plan in the form {@code ShuffleBlockFetcherIterator} takes. */
  scala.collection.Iterator<Tuple2<BlockManagerId, scala.collection.Seq<Tuple3<BlockId, Object, Object>>>> toScala() {
    List<Tuple2<BlockManagerId, scala.collection.Seq<Tuple3<BlockId, Object, Object>>>> out = new ArrayList<>();
    for (Map.Entry<BlockManagerId, List<Block>> loc : byLocation.entrySet()) {
      List<Tuple3<BlockId, Object, Object>> blocks = new ArrayList<>();
      for (Block b : loc.getValue()) blocks.add(new Tuple3<BlockId, Object, Object>(b.id(), b.size(), b.mapIndex()));
      out.add(new Tuple2<>(loc.getKey(), CollectionConverters.asScala(blocks).toSeq()));
    }
    return CollectionConverters.asScala(out.iterator());
  }
}
