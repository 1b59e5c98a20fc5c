package dev.sparkrm.riffle;

import dev.sparkrm.compat.SparkCompat;
import java.io.InputStream;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import org.apache.spark.FetchFailed;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.serializer.SerializerInstance;
import org.apache.spark.serializer.SerializerManager;
import org.apache.spark.shuffle.FetchFailedException;
import org.apache.spark.shuffle.ShuffleReadMetricsReporter;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.BlockManagerId;
import org.apache.spark.storage.ShuffleBlockBatchId;
import org.apache.spark.storage.ShuffleBlockFetcherIterator;
import org.apache.spark.storage.ShuffleBlockId;
import org.apache.spark.util.TaskCompletionListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Function2;
import scala.Tuple2;
import scala.collection.AbstractIterator;
import scala.collection.Iterator;

/**
 * All key-value records of one reduce task's shuffle read, from merged and original blocks.
 *
 * <p>It drives Spark's own {@code ShuffleBlockFetcherIterator} over a {@link FetchPlan}. When a merged
 * block cannot be fetched (lost file, dead executor) or fails verification (corrupt, truncated), it
 * abandons that fetcher, clears the task's fetch-failure mark, and continues with a new fetcher
 * over what is left, reading the original blocks of that merge that were not read yet: no stage
 * retry, no map recomputation. The merge is reported so that later readers skip it.
 *
 * <p>A fetch failure of an original block from an executor we also fetch merged blocks from is
 * first blamed on those merged blocks: a missing merged file makes the serving executor close the
 * whole connection, failing every block in flight on it. So all merged blocks of that executor are
 * replaced and the originals fetched again; only a second failure, with no merged block left to
 * blame, takes Spark's standard path (FetchFailed, recomputation of the lost map output).
 *
 * <p>Accounting is per (map output, partition): an original block counts when it is opened (Spark
 * fails the task if it breaks later), a merged sub-block only once its last record was emitted.
 * At the end every pair of Spark's block list must have been read exactly once; a violation is a
 * bug and fails the task rather than return wrong results.
 */
final class ShuffleRecordIterator extends AbstractIterator<Tuple2<Object, Object>> {
  private static final Logger LOG = LoggerFactory.getLogger(ShuffleRecordIterator.class);

  /** Told about a merged output a reader found unusable. */
  interface BadMerges {
    void report(long syntheticMapId, String reason);
  }

  private final int shuffleId;
  private final TaskContext context;
  private final ShuffleReadMetricsReporter metrics;
  private final SerializerInstance serializer;
  private final SerializerManager serializerManager;
  /** Spark's batch fetch, until a fallback: then blocks are fetched one by one (see {@link #fallback}). */
  private boolean batchFetch;
  private final long verifyMaxBytes;
  private final BadMerges badMergeReports;
  private final Runnable onComplete;

  private FetchPlan plan;
  private ShuffleBlockFetcherIterator fetcher;
  private Iterator<Tuple2<Object, Object>> current;
  private MergedBlockRecords currentMerged;
  /** Original blocks opened and merged partitions read to their end, by (map id, reduce id). */
  private final Set<FetchPlan.Piece> consumed = new HashSet<>();
  /** (map index, reduce id) pairs read so far, from either kind of block. */
  private final Set<List<Integer>> covered = new HashSet<>();
  private final Set<Long> badMerges = new HashSet<>();
  private boolean finished;
  final Map<String, Long> stats = new LinkedHashMap<>();

  ShuffleRecordIterator(int shuffleId, FetchPlan plan, TaskContext context, ShuffleReadMetricsReporter metrics,
      SerializerInstance serializer, SerializerManager serializerManager, boolean batchFetch, long verifyMaxBytes,
      BadMerges badMergeReports, Runnable onComplete) {
    this.shuffleId = shuffleId;
    this.plan = plan;
    this.context = context;
    this.metrics = metrics;
    this.serializer = serializer;
    this.serializerManager = serializerManager;
    this.batchFetch = batchFetch;
    this.verifyMaxBytes = verifyMaxBytes;
    this.badMergeReports = badMergeReports;
    this.onComplete = onComplete;
    for (String k : new String[] {"mergedBlocks", "originalBlocks", "mergedBytes", "coveredBlocks", "fallbacks",
        "badMergedBlocks", "spilledSubBlocks"}) {
      stats.put(k, 0L);
    }
    context.addTaskCompletionListener((TaskCompletionListener) ctx -> closeMerged());
    this.fetcher = newFetcher();
  }

  @Override
  public boolean hasNext() {
    while (!finished) {
      try {
        if (current != null && current.hasNext()) return true;
      } catch (MergedBlockUnusable e) {
        unusable(e);
        continue;
      } catch (MergedBlockFailed e) {
        throw failed(e);
      }
      if (!nextBlock()) finish();
    }
    return false;
  }

  @Override
  public Tuple2<Object, Object> next() {
    while (true) {
      if (!hasNext()) throw new NoSuchElementException();
      try {
        Tuple2<Object, Object> record = current.next();
        metrics.incRecordsRead(1);
        return record;
      } catch (MergedBlockUnusable e) {
        unusable(e);
      } catch (MergedBlockFailed e) {
        throw failed(e);
      }
    }
  }

  /** Opens the next fetched block; false when there is none. */
  private boolean nextBlock() {
    closeMerged();
    while (fetcher.hasNext()) {
      Tuple2<BlockId, InputStream> block;
      try {
        block = fetcher.next();
      } catch (Exception e) { // Scala throws FetchFailedException without declaring it
        Set<Long> suspects = suspectMerges(e);
        if (suspects.isEmpty()) throw SparkCompat.rethrow(e);
        for (long syn : suspects) reportBad(syn, "a fetch from its executor failed (" + e.getMessage() + ")");
        fallback(suspects, true);
        continue;
      }
      BlockId id = block._1();
      long mapId = mapIdOf(id);
      if (MergedBlockFormat.isSynthetic(mapId)) {
        MergedBlockReader reader = new MergedBlockReader(block._2(), plan.inputsOf(mapId), plan.mergedReduceIds(id),
            mapIndex -> plan.wants(mapId, mapIndex), verifyMaxBytes, ShuffleRecordIterator::spillFile);
        currentMerged = new MergedBlockRecords(id, shuffleId, mapId, reader, serializer, serializerManager,
            new Progress(mapId));
        add("mergedBlocks", 1);
        current = currentMerged;
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

  /** Counts what a merged block emitted, as it goes out. */
  private final class Progress implements MergedBlockRecords.Progress {
    private final long syntheticMapId;

    Progress(long syntheticMapId) {
      this.syntheticMapId = syntheticMapId;
    }

    @Override
    public void subBlockRead(int mapIndex, int reduceId) {
      cover(mapIndex, reduceId);
      add("coveredBlocks", 1);
    }

    @Override
    public void partitionRead(int reduceId) {
      consumed.add(new FetchPlan.Piece(syntheticMapId, reduceId));
    }
  }

  private void cover(int mapIndex, int reduceId) {
    if (!covered.add(List.of(mapIndex, reduceId))) {
      throw new IllegalStateException("Riffle read map output " + mapIndex + " of partition " + reduceId
          + " of shuffle " + shuffleId + " twice");
    }
  }

  /** A merged block failed verification before its records were used: read the rest from the originals. */
  private void unusable(MergedBlockUnusable e) {
    add("badMergedBlocks", 1);
    reportBad(e.syntheticMapId, e.getMessage());
    fallback(Set.of(e.syntheticMapId), false);
  }

  /**
   * A merged sub-block failed after some of its records were used. Its bytes passed the checksum, so
   * the map output it came from is damaged as well: fail the task as Spark does for a damaged
   * original block (a fetch failure of that block), after telling the driver not to hand out this
   * merge again.
   */
  private RuntimeException failed(MergedBlockFailed e) {
    add("badMergedBlocks", 1);
    reportBad(e.syntheticMapId, e.getMessage());
    closeMerged();
    FetchPlan.Block original = plan.original(e.syntheticMapId, e.mapIndex, e.reduceId);
    return SparkCompat.rethrow(new FetchFailedException(original.location(), shuffleId,
        ((ShuffleBlockId) original.id()).mapId(), e.mapIndex, e.reduceId, e.getMessage(), e));
  }

  /** Logs and reports a merged output this read stops using. */
  private void reportBad(long syntheticMapId, String reason) {
    BlockManagerId location = plan.locationOf(syntheticMapId);
    LOG.warn("Riffle: shuffle {}, merge group {} (written on executor {}) is unusable on executor {}: {}; reading "
        + "its original blocks instead", shuffleId, MergedBlockFormat.groupIdOf(syntheticMapId),
        location == null ? "?" : location.executorId(), SparkEnv.get().executorId(), reason);
    badMergeReports.report(syntheticMapId, reason);
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
    closeMerged();
    SparkCompat.discardFetcher(fetcher);
    if (fromFetchFailure) SparkCompat.clearFetchFailure(context);
    plan = plan.without(badMerges, consumed, covered);
    current = null;
    batchFetch = false;
    fetcher = newFetcher();
  }

  private void closeMerged() {
    if (currentMerged == null) return;
    add("mergedBytes", currentMerged.bytesRead());
    add("spilledSubBlocks", currentMerged.spilledSubBlocks());
    currentMerged.close();
    currentMerged = null;
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

  /** A task-scoped file in the executor's local directories, for verifying a large sub-block. */
  private static java.io.File spillFile() {
    return SparkEnv.get().blockManager().diskBlockManager().createTempLocalBlock()._2();
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
}
