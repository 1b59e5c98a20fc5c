package dev.sparkrm.riffle;

import dev.sparkrm.compat.SparkCompat;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.Aggregator;
import org.apache.spark.InterruptibleIterator;
import org.apache.spark.MapOutputTracker;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.shuffle.BaseShuffleHandle;
import org.apache.spark.shuffle.ShuffleReadMetricsReporter;
import org.apache.spark.shuffle.ShuffleReader;
import scala.Function1;
import scala.Option;
import scala.Product2;
import scala.collection.Iterator;
import scala.math.Ordering;

/**
 * A reduce task's reader: merged outputs where valid ones exist, originals elsewhere.
 *
 * <p>It gets the shuffle's read plan from the driver (waiting while merges are collected, at most
 * until the best-effort deadline), rewrites Spark's block list ({@link FetchPlan}), reads the records
 * ({@link ShuffleRecordIterator}), and then aggregates and sorts exactly as Spark's
 * {@code BlockStoreShuffleReader} does in 4.1.
 */
final class RiffleShuffleReader<K, C> implements ShuffleReader<K, C> {
  private final BaseShuffleHandle<K, ?, C> handle;
  private final int startMapIndex;
  private final int endMapIndex;
  private final int startPartition;
  private final int endPartition;
  private final TaskContext context;
  private final ShuffleReadMetricsReporter metrics;
  private final RiffleExecutor agent;

  RiffleShuffleReader(BaseShuffleHandle<K, ?, C> handle, int startMapIndex, int endMapIndex, int startPartition,
      int endPartition, TaskContext context, ShuffleReadMetricsReporter metrics, RiffleExecutor agent) {
    this.handle = handle;
    this.startMapIndex = startMapIndex;
    this.endMapIndex = endMapIndex;
    this.startPartition = startPartition;
    this.endPartition = endPartition;
    this.context = context;
    this.metrics = metrics;
    this.agent = agent;
  }

  @Override
  @SuppressWarnings({"unchecked", "rawtypes"})
  public Iterator<Product2<K, C>> read() {
    ShuffleDependency<K, ?, C> dep = handle.dependency();
    int shuffleId = handle.shuffleId();
    SparkEnv env = SparkEnv.get();
    MapOutputTracker tracker = env.mapOutputTracker();
    var vanilla = tracker.getMapSizesByExecutorId(shuffleId, startMapIndex, endMapIndex, startPartition, endPartition);
    long waitStart = System.currentTimeMillis();
    ReadPlan readPlan = agent.plan(shuffleId, SparkCompat.mapOutputEpoch(tracker));
    long planWaitMs = System.currentTimeMillis() - waitStart;
    boolean batchFetch = SparkCompat.batchFetch(dep, startPartition, endPartition, context);
    FetchPlan plan = FetchPlan.build(shuffleId, vanilla, readPlan.riffle() ? readPlan : ReadPlan.UNMERGED,
        SparkCompat.mapStatuses(tracker, shuffleId), startMapIndex, endMapIndex, batchFetch,
        agent.partialMerges(context));
    ShuffleRecordIterator[] self = new ShuffleRecordIterator[1];
    ShuffleRecordIterator records = new ShuffleRecordIterator(shuffleId, plan, context, metrics,
        dep.serializer().newInstance(), env.serializerManager(), batchFetch, agent.verifyMaxBytes(),
        (syntheticMapId, reason) -> agent.revoke(shuffleId, syntheticMapId, reason), () -> {
          context.taskMetrics().mergeShuffleReadMetrics();
          agent.reportRead(stats(self[0], plan, shuffleId, planWaitMs));
        });
    self[0] = records;
    Iterator interruptible = new InterruptibleIterator(context, records);
    Iterator result;
    Option<Ordering<K>> ordering = dep.keyOrdering();
    Option<Aggregator> aggregator = (Option) dep.aggregator();
    if (ordering.isDefined()) {
      Option<Aggregator> sortAggregator = aggregator;
      if (aggregator.isDefined() && dep.mapSideCombine()) { // values are already combiners
        Aggregator a = aggregator.get();
        sortAggregator = Option.apply(new Aggregator((Function1) x -> x, a.mergeCombiners(), a.mergeCombiners()));
      }
      result = SparkCompat.sorter(context, (Option) sortAggregator, ordering, dep.serializer())
          .insertAllAndUpdateMetrics(interruptible);
    } else if (aggregator.isDefined()) {
      result = dep.mapSideCombine()
          ? aggregator.get().combineCombinersByKey(interruptible, context)
          : aggregator.get().combineValuesByKey(interruptible, context);
    } else {
      result = interruptible;
    }
    return result instanceof InterruptibleIterator ? result : new InterruptibleIterator(context, result);
  }

  private Map<String, Object> stats(ShuffleRecordIterator records, FetchPlan plan, int shuffleId, long planWaitMs) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("executorId", agent.executorId());
    m.put("shuffleId", shuffleId);
    m.put("stageId", context.stageId());
    m.put("stageAttempt", context.stageAttemptNumber());
    m.put("taskId", context.taskAttemptId());
    m.put("startPartition", startPartition);
    m.put("endPartition", endPartition);
    m.put("startMapIndex", startMapIndex);
    m.put("endMapIndex", endMapIndex);
    m.putAll(records.stats);
    m.put("expectedBlocks", plan.coverage.size());
    m.put("vanillaReads", plan.vanillaReads);
    m.put("groupsUsed", plan.groupsUsed);
    m.put("groupsPartial", plan.groupsPartial);
    m.put("groupsRejected", plan.groupsRejected);
    m.put("planWaitMs", planWaitMs);
    return m;
  }
}
