package dev.sparkrm.riffle;

import dev.sparkrm.compat.SparkCompat;
import java.io.InputStream;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import org.apache.spark.TaskContext;
import org.apache.spark.serializer.SerializerInstance;
import org.apache.spark.serializer.SerializerManager;
import org.apache.spark.shuffle.FetchFailedException;
import org.apache.spark.shuffle.ShuffleReadMetricsReporter;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.ShuffleBlockBatchId;
import org.apache.spark.storage.ShuffleBlockFetcherIterator;
import org.apache.spark.storage.ShuffleBlockId;
import org.apache.spark.FetchFailed;
import scala.Function2;
import scala.Tuple2;
import scala.collection.AbstractIterator;
import scala.collection.Iterator;

/**
 * All key-value records of one reduce task's shuffle read, from merged and original blocks.
 *
 * <p>It drives Spark's own {@code ShuffleBlockFetcherIterator} over a {@link FetchPlan}. When a merged
 * block cannot be fetched (lost file, dead executor) or read (corrupt), it abandons that fetcher,
 * clears the task's fetch-failure mark, and continues with a new fetcher over what is left, reading
 * the failed merge's original blocks instead: no stage retry, no map recomputation.
 *
 * <p>A fetch failure of an original block from an executor we also fetch merged blocks from is
 * first blamed on those merged blocks: a missing merged file makes the serving executor close the
 * whole connection, failing every block in flight on it. So all merged blocks of that executor are
 * replaced and the originals fetched again; only a second failure, with no merged block left to
 * blame, takes Spark's standard path (FetchFailed, recomputation of the lost map output).
 *
 * <p>It also checks that every (map output, partition) of Spark's block list was read exactly once;
 * a violation is a bug and fails the task rather than return wrong results.
 */
final class ShuffleRecordIterator extends AbstractIterator<Tuple2<Object, Object>> {
  private final int shuffleId;
  private final TaskContext context;
  private final ShuffleReadMetricsReporter metrics;
  private final SerializerInstance serializer;
  private final SerializerManager serializerManager;
  /** Spark's batch fetch, until a fallback: then blocks are fetched one by one (see {@link #fallback}). */
  private boolean batchFetch;
  private final long verifyMaxBytes;
  private final Runnable onComplete;

  private FetchPlan plan;
  private ShuffleBlockFetcherIterator fetcher;
  private Iterator<Tuple2<Object, Object>> current;
  private final Set<FetchPlan.Piece> consumed = new HashSet<>();
  private final Set<List<Integer>> covered = new HashSet<>();
  private final Set<Long> badMerges = new HashSet<>();
  private boolean finished;
  final Map<String, Long> stats = new LinkedHashMap<>();

  ShuffleRecordIterator(int shuffleId, FetchPlan plan, TaskContext context, ShuffleReadMetricsReporter metrics,
      SerializerInstance serializer, SerializerManager serializerManager, boolean batchFetch, long verifyMaxBytes,
      Runnable onComplete) {
    this.shuffleId = shuffleId;
    this.plan = plan;
    this.context = context;
    this.metrics = metrics;
    this.serializer = serializer;
    this.serializerManager = serializerManager;
    this.batchFetch = batchFetch;
    this.verifyMaxBytes = verifyMaxBytes;
    this.onComplete = onComplete;
    for (String k : new String[] {"mergedBlocks", "originalBlocks", "mergedBytes", "coveredBlocks", "fallbacks"}) {
      stats.put(k, 0L);
    }
    this.fetcher = newFetcher();
  }

  @Override
  public boolean hasNext() {
    while (!finished) {
      try {
        if (current != null && current.hasNext()) return true;
      } catch (MergedBlockUnusable e) {
        fallback(Set.of(e.syntheticMapId), false);
        continue;
      }
      if (!nextBlock()) finish();
    }
    return false;
  }

  @Override
  public Tuple2<Object, Object> next() {
    if (!hasNext()) throw new NoSuchElementException();
    metrics.incRecordsRead(1);
    return current.next();
  }

  /** Opens the next fetched block; false when there is none. */
  private boolean nextBlock() {
    while (fetcher.hasNext()) {
      Tuple2<BlockId, InputStream> block;
      try {
        block = fetcher.next();
      } catch (Exception e) { // Scala throws FetchFailedException without declaring it
        Set<Long> suspects = suspectMerges(e);
        if (suspects.isEmpty()) throw SparkCompat.rethrow(e);
        fallback(suspects, true);
        continue;
      }
      BlockId id = block._1();
      long mapId = mapIdOf(id);
      if (MergedBlockFormat.isSynthetic(mapId)) {
        MergedBlockRecords records = new MergedBlockRecords(id, shuffleId, mapId, block._2(), serializer,
            serializerManager, verifyMaxBytes, h -> usedPartition(mapId, h));
        add("mergedBlocks", 1);
        current = new CountingIterator(records);
      } else {
        for (int r : reduceIds(id)) { // a batch may span empty partitions, which Spark never lists
          consumed.add(new FetchPlan.Piece(mapId, r));
          if (plan.coverage.contains(List.of(plan.mapIndexOf(mapId), r))) cover(plan.mapIndexOf(mapId), r);
        }
        add("originalBlocks", 1);
        current = serializer.deserializeStream(block._2()).asKeyValueIterator();
      }
      return true;
    }
    return false;
  }

  /** A merged partition passed its checks: its sub-blocks now count as read. */
  private void usedPartition(long syntheticMapId, MergedBlockFormat.Header h) {
    consumed.add(new FetchPlan.Piece(syntheticMapId, h.reduceId()));
    for (int i = 0; i < h.mapIndexes().length; i++) {
      if (h.lengths()[i] > 0) {
        cover(h.mapIndexes()[i], h.reduceId());
        add("coveredBlocks", 1);
      }
    }
  }

  private void cover(int mapIndex, int reduceId) {
    if (!covered.add(List.of(mapIndex, reduceId))) {
      throw new IllegalStateException("Riffle read map output " + mapIndex + " of partition " + reduceId
          + " of shuffle " + shuffleId + " twice");
    }
  }

  /**
   * Replaces merged outputs {@code syntheticMapIds} by their originals for the rest of this read.
   *
   * <p>The rest is fetched without batching: Spark's batch fetch turns consecutive blocks of one map
   * output into a single reduce-id range, whatever lies between them, and a server accepts only
   * one range per map output and request. After part of the blocks was consumed neither holds.
   */
  private void fallback(Set<Long> syntheticMapIds, boolean fromFetchFailure) {
    badMerges.addAll(syntheticMapIds);
    add("fallbacks", syntheticMapIds.size());
    SparkCompat.discardFetcher(fetcher);
    if (fromFetchFailure) SparkCompat.clearFetchFailure(context);
    plan = plan.without(badMerges, consumed);
    current = null;
    batchFetch = false;
    fetcher = newFetcher();
  }

  private void finish() {
    finished = true;
    fetcher.cleanup();
    if (!covered.equals(plan.coverage)) {
      Set<List<Integer>> missing = new HashSet<>(plan.coverage);
      missing.removeAll(covered);
      throw new IllegalStateException("Riffle read of shuffle " + shuffleId + " missed " + missing.size()
          + " blocks, e.g. " + missing.iterator().next());
    }
    onComplete.run();
  }

  private ShuffleBlockFetcherIterator newFetcher() {
    Function2<BlockId, InputStream, InputStream> wrap = (id, in) ->
        MergedBlockFormat.isSynthetic(mapIdOf(id)) ? in : serializerManager.wrapStream(id, in);
    return SparkCompat.newFetcher(context, plan.toScala(), wrap, metrics, batchFetch);
  }

  private void add(String key, long n) {
    stats.merge(key, n, Long::sum);
  }

  /** The merged outputs to blame for fetch failure {@code e}: every one still planned from that executor. */
  private Set<Long> suspectMerges(Exception e) {
    if (!(e instanceof FetchFailedException)) return Set.of();
    Object reason = ((FetchFailedException) e).toTaskFailedReason();
    if (!(reason instanceof FetchFailed)) return Set.of();
    FetchFailed failed = (FetchFailed) reason;
    Set<Long> suspects = new HashSet<>(plan.mergedAt(failed.bmAddress()));
    if (MergedBlockFormat.isSynthetic(failed.mapId())) suspects.add(failed.mapId());
    suspects.removeAll(badMerges);
    return suspects;
  }

  private static long mapIdOf(BlockId id) {
    if (id instanceof ShuffleBlockId) return ((ShuffleBlockId) id).mapId();
    if (id instanceof ShuffleBlockBatchId) return ((ShuffleBlockBatchId) id).mapId();
    throw new IllegalArgumentException("Unexpected shuffle block " + id);
  }

  private static int[] reduceIds(BlockId id) {
    if (id instanceof ShuffleBlockId) return new int[] {((ShuffleBlockId) id).reduceId()};
    ShuffleBlockBatchId b = (ShuffleBlockBatchId) id;
    int[] ids = new int[b.endReduceId() - b.startReduceId()];
    for (int i = 0; i < ids.length; i++) ids[i] = b.startReduceId() + i;
    return ids;
  }

  /** Adds a merged block's bytes to the statistics once it is fully read. */
  private final class CountingIterator extends AbstractIterator<Tuple2<Object, Object>> {
    private final MergedBlockRecords records;
    private boolean counted;

    CountingIterator(MergedBlockRecords records) {
      this.records = records;
    }

    @Override
    public boolean hasNext() {
      boolean more = records.hasNext();
      if (!more && !counted) {
        counted = true;
        add("mergedBytes", records.bytesRead());
      }
      return more;
    }

    @Override
    public Tuple2<Object, Object> next() {
      return records.next();
    }
  }
}
