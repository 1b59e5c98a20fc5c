package dev.sparkrm.riffle;

import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.apache.spark.shuffle.IndexShuffleBlockResolver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The executor's merger: a small thread pool that runs merge assignments within a memory budget.
 *
 * <p>A merge of n inputs needs n read buffers and one write buffer. When that is more than the
 * budget, the read buffers shrink (down to 64 KiB) so that any single merge can run; otherwise
 * merges wait for memory in arrival order ({@link MergeBudget}).
 */
final class MergerService {
  private static final Logger LOG = LoggerFactory.getLogger(MergerService.class);
  private static final int MIN_READ_BUFFER = 64 * 1024;

  private final ExecutorService pool;
  private final MergeBudget budget;
  private final int readBufferBytes;
  private final int writeBufferBytes;
  private final Supplier<IndexShuffleBlockResolver> resolver;
  private final FaultInjection faults;
  private final Map<Long, AtomicBoolean> cancelFlags = new ConcurrentHashMap<>();

  MergerService(int threads, long budgetBytes, int readBufferBytes, int writeBufferBytes,
      Supplier<IndexShuffleBlockResolver> resolver, FaultInjection faults) {
    this.pool = Executors.newFixedThreadPool(threads, r -> {
      Thread t = new Thread(r, "riffle-merger");
      t.setDaemon(true);
      return t;
    });
    this.budget = new MergeBudget(budgetBytes);
    this.readBufferBytes = readBufferBytes;
    this.writeBufferBytes = writeBufferBytes;
    this.resolver = resolver;
    this.faults = faults;
  }

  long peakBufferBytes() {
    return budget.peak();
  }

  /** Queues {@code a}; {@code onDone} is called on a merger thread with the outcome. */
  void submit(MergeAssignment a, Consumer<MergeOutcome> onDone) {
    AtomicBoolean cancelled = new AtomicBoolean();
    cancelFlags.put(a.groupId(), cancelled);
    long queuedAt = System.nanoTime();
    pool.execute(() -> onDone.accept(run(a, cancelled, queuedAt)));
  }

  /** Asks a queued or running merge to stop; it deletes its partial output. */
  void cancel(long groupId) {
    AtomicBoolean flag = cancelFlags.get(groupId);
    if (flag != null) flag.set(true);
  }

  void stop() {
    cancelFlags.values().forEach(f -> f.set(true));
    pool.shutdownNow();
    try {
      pool.awaitTermination(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private MergeOutcome run(MergeAssignment a, AtomicBoolean cancelled, long queuedAt) {
    int n = a.inputs().size();
    int readBuffer = (int) Math.max(MIN_READ_BUFFER,
        Math.min(readBufferBytes, (budget.capacity() - writeBufferBytes) / n));
    long bytes = Math.min(budget.capacity(), (long) n * readBuffer + writeBufferBytes);
    boolean waited;
    try {
      waited = budget.acquire(bytes);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return outcome(a, "cancelled", "interrupted while queued", null, queuedAt, queuedAt, 0, true);
    }
    long startedAt = System.nanoTime();
    try {
      faults.beforeMerge(a);
      MergeWriter.Result r = new MergeWriter(resolver.get()).merge(
          a.shuffleId(), a.syntheticMapId(), a.inputs(), readBuffer, writeBufferBytes, cancelled::get);
      faults.afterCommit(a, resolver.get());
      return outcome(a, "committed", null, r, queuedAt, startedAt, bytes, waited);
    } catch (CancellationException e) {
      return outcome(a, "cancelled", "cancelled by the driver", null, queuedAt, startedAt, bytes, waited);
    } catch (MergeWriter.PeerFilesUnreadable e) {
      return outcome(a, RiffleScheduler.UNREADABLE, e.getMessage(), null, queuedAt, startedAt, bytes, waited);
    } catch (Exception e) { // IOException, or anything else from Spark's resolver: the merge failed
      LOG.warn("Riffle merge {} of shuffle {} failed; its {} map outputs will be read unmerged: {}",
          a.groupId(), a.shuffleId(), n, e.toString());
      return outcome(a, "failed", e.toString(), null, queuedAt, startedAt, bytes, waited);
    } finally {
      budget.release(bytes);
      cancelFlags.remove(a.groupId());
    }
  }

  private static MergeOutcome outcome(MergeAssignment a, String status, String error, MergeWriter.Result r,
      long queuedAt, long startedAt, long bufferBytes, boolean waitedForMemory) {
    long now = System.nanoTime();
    return new MergeOutcome(a, status, error, r == null ? 0 : r.inputBytes(), r == null ? 0 : r.outputBytes(),
        TimeUnit.NANOSECONDS.toMillis(startedAt - queuedAt), TimeUnit.NANOSECONDS.toMillis(now - startedAt),
        bufferBytes, waitedForMemory);
  }
}
