package dev.sparkrm.compat;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.util.Properties;
import org.apache.spark.Aggregator;
import org.apache.spark.MapOutputTracker;
import org.apache.spark.MapOutputTrackerMaster;
import org.apache.spark.MapOutputTrackerWorker;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.ShuffleStatus;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.TaskContextImpl;
import org.apache.spark.internal.config.package$;
import org.apache.spark.io.CompressionCodec$;
import org.apache.spark.scheduler.MapStatus;
import org.apache.spark.serializer.Serializer;
import org.apache.spark.shuffle.ShuffleReadMetricsReporter;
import org.apache.spark.shuffle.sort.SortShuffleManager;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.BlockManagerId;
import org.apache.spark.storage.ShuffleBlockFetcherIterator;
import org.apache.spark.storage.ShuffleBlockFetcherIterator$;
import org.apache.spark.util.collection.ExternalSorter;
import org.apache.spark.util.collection.ExternalSorter$;
import scala.Function2;
import scala.Option;
import scala.Tuple2;
import scala.Tuple3;
import scala.math.Ordering;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.scheduler.SparkListenerInterface;

/**
 * Every use of Spark API that is internal or changed between releases, in one place: listener-bus
 * access for telemetry, the shuffle-reading internals Riffle's reader builds on, and the
 * scheduler state Wrangler's holds use and give way to.
 *
 * <p>The jar is compiled against the installed pyspark's jars; {@code build.properties} in the jar
 * records which Spark version that was, and {@link #checkRuntimeVersion} refuses to start on a
 * different major.minor line, where internal signatures differ (e.g. 3.5 needs the jar on
 * {@code extraClassPath} for a shuffle manager; 4.3 moved {@code shuffleBlockResolver()} to
 * {@code BlockingShuffleManager}).
 */
public final class SparkCompat {
  private static final String BUILD_INFO = "/dev/sparkrm/build.properties";

  private SparkCompat() {}

  /** The Spark version this JVM runs. */
  public static String runtimeSparkVersion() {
    return org.apache.spark.package$.MODULE$.SPARK_VERSION();
  }

  /** The Spark version the jar was compiled against (from {@code build.properties}). */
  public static String builtForSparkVersion() {
    return buildInfo().getProperty("spark.version");
  }

  /**
   * Fails with a clear message when the running Spark is another major.minor line than the jar's.
   *
   * @throws IllegalStateException naming both versions and the rebuild command
   */
  public static void checkRuntimeVersion() {
    String built = builtForSparkVersion();
    String running = runtimeSparkVersion();
    if (!majorMinor(built).equals(majorMinor(running))) {
      throw new IllegalStateException("The sparkrm jar was compiled against Spark " + built
          + " but this application runs Spark " + running + ". Rebuild it against this Spark with "
          + "`python -m spark_plugin jar --rebuild` where pyspark==" + running + " is installed.");
    }
  }

  /** Java/py4j-facing copy of the build information (spark.version, source.hash, package.version). */
  public static Properties buildInfo() {
    Properties p = new Properties();
    try (InputStream in = SparkCompat.class.getResourceAsStream(BUILD_INFO)) {
      if (in == null) throw new IllegalStateException("The sparkrm jar lacks " + BUILD_INFO + "; rebuild it");
      p.load(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return p;
  }

  /**
   * The running SparkContext of this JVM, or null: {@code SparkContext.getActive} is private[spark]
   * in Scala and public in bytecode (4.0-4.2); unlike {@code getOrCreate} it never starts one.
   */
  public static SparkContext activeContext() {
    Option<SparkContext> active = org.apache.spark.SparkContext$.MODULE$.getActive();
    return active.isDefined() ? active.get() : null;
  }

  /**
   * Adds {@code listener} on its own listener-bus queue, so that it neither slows nor is slowed by
   * other listeners. Its capacity is Spark's {@code spark.scheduler.listenerbus.eventqueue.<queue>.capacity}.
   * {@code LiveListenerBus.addToQueue} is private[spark] in Scala and public in bytecode (4.0-4.2).
   */
  public static void addListener(SparkContext sc, SparkListenerInterface listener, String queue) {
    sc.listenerBus().addToQueue(listener, queue);
  }

  /** Posts {@code event} to every listener queue ({@code LiveListenerBus.post}, private[spark] in Scala). */
  public static void postEvent(SparkContext sc, SparkListenerEvent event) {
    sc.listenerBus().post(event);
  }

  // ---- Scheduler internals used by Wrangler's holds (checked against the 4.1 bytecode) ----

  /**
   * The backend's set of executors whose loss reason is pending. {@code isExecutorActive} is false for
   * its members, so {@code DriverEndpoint.makeOffers} offers them nothing; add and remove only while
   * holding the backend's monitor. A Scala {@code protected val}, public in bytecode (4.0-4.2).
   */
  public static scala.collection.mutable.HashSet<String> pendingLossReasons(
      org.apache.spark.scheduler.cluster.CoarseGrainedSchedulerBackend backend) {
    return backend.executorsPendingLossReason();
  }

  /**
   * Runs {@code action} when this JVM receives {@code signal} (e.g. {@code PWR}), after the actions Spark
   * registered; the signal escalates to the JVM's default only when every action returns false
   * ({@code SignalUtils}, private[spark], public in bytecode 4.0-4.2).
   */
  public static void onSignal(String signal, java.util.function.BooleanSupplier action) {
    org.apache.spark.util.SignalUtils$.MODULE$.register(signal, () -> action.getAsBoolean());
  }

  /**
   * Whether a barrier job waits for a retry because its stage found too few slots
   * ({@code DAGScheduler.barrierJobIdToNumTasksCheckFailures}, private[scheduler], public in bytecode 4.0-4.2).
   */
  public static boolean barrierJobsWaitingForSlots(SparkContext sc) {
    org.apache.spark.scheduler.DAGScheduler dag = sc.dagScheduler();
    return dag != null && !dag.barrierJobIdToNumTasksCheckFailures().isEmpty();
  }

  /**
   * Whether a decommission of {@code executorId} was asked while it was inactive and parked in the backend's
   * {@code unknownExecutorsPendingDecommission} (a protected val, public in bytecode 4.0-4.2). Spark parks
   * at most {@code spark.scheduler.maxRetainedUnknownDecommissionExecutors} requests, by default none.
   */
  public static boolean parkedDecommission(
      org.apache.spark.scheduler.cluster.CoarseGrainedSchedulerBackend backend, String executorId) {
    return backend.unknownExecutorsPendingDecommission().getIfPresent(executorId) != null;
  }

  /**
   * Re-issues a parked decommission of {@code executorId}, now active again, from the driver (so the
   * executor is told, even when it asked itself and gave up on the driver's refusal); call it holding no
   * lock, as it takes the scheduler's and the backend's. Returns whether there was one.
   */
  public static boolean reissueParkedDecommission(
      org.apache.spark.scheduler.cluster.CoarseGrainedSchedulerBackend backend, String executorId) {
    Tuple3<org.apache.spark.scheduler.ExecutorDecommissionInfo, Object, Object> parked =
        backend.unknownExecutorsPendingDecommission().getIfPresent(executorId);
    if (parked == null) return false;
    backend.unknownExecutorsPendingDecommission().invalidate(executorId);
    return backend.decommissionExecutor(executorId, parked._1(), (Boolean) parked._2(), false);
  }

  /** Whether Spark decommissions {@code executorId} ({@code executorsPendingDecommission}); hold the backend's monitor. */
  public static boolean decommissioning(
      org.apache.spark.scheduler.cluster.CoarseGrainedSchedulerBackend backend, String executorId) {
    return backend.executorsPendingDecommission().contains(executorId);
  }

  /** Decommissions {@code executorId} from the driver, as Spark's own request; holding no lock. */
  public static boolean decommission(
      org.apache.spark.scheduler.cluster.CoarseGrainedSchedulerBackend backend, String executorId, String why) {
    return backend.decommissionExecutor(executorId,
        new org.apache.spark.scheduler.ExecutorDecommissionInfo(why, Option.empty()), false, false);
  }

  // ---- Shuffle internals used by Riffle's reader (checked against the 4.1 bytecode) ----

  /** The map statuses registered for {@code shuffleId} on this JVM, or {@code null} when unknown. */
  public static MapStatus[] mapStatuses(MapOutputTracker tracker, int shuffleId) {
    if (tracker instanceof MapOutputTrackerWorker) { // executors: the fetched copy
      Option<MapStatus[]> s = ((MapOutputTrackerWorker) tracker).mapStatuses().get(shuffleId);
      return s.isDefined() ? s.get() : null;
    }
    if (tracker instanceof MapOutputTrackerMaster) { // local mode: the driver's own
      Option<ShuffleStatus> s = ((MapOutputTrackerMaster) tracker).shuffleStatuses().get(shuffleId);
      return s.isDefined() ? s.get().mapStatuses() : null;
    }
    return null;
  }

  /** The tracker's epoch, which Spark raises whenever registered map outputs change. */
  public static long mapOutputEpoch(MapOutputTracker tracker) {
    return tracker.epoch();
  }

  /** A stock {@code ShuffleBlockFetcherIterator} configured exactly as Spark's own reader configures it. */
  public static ShuffleBlockFetcherIterator newFetcher(TaskContext context,
      scala.collection.Iterator<Tuple2<BlockManagerId, scala.collection.Seq<Tuple3<BlockId, Object, Object>>>> blocks,
      Function2<BlockId, InputStream, InputStream> streamWrapper, ShuffleReadMetricsReporter metrics,
      boolean batchFetch) {
    SparkEnv env = SparkEnv.get();
    SparkConf conf = env.conf();
    package$ c = package$.MODULE$;
    return new ShuffleBlockFetcherIterator(context, env.blockManager().blockStoreClient(), env.blockManager(),
        env.mapOutputTracker(), blocks, streamWrapper,
        (Long) conf.get(c.REDUCER_MAX_SIZE_IN_FLIGHT()) * 1024 * 1024,
        (Integer) conf.get(c.REDUCER_MAX_REQS_IN_FLIGHT()),
        (Integer) conf.get(c.REDUCER_MAX_BLOCKS_IN_FLIGHT_PER_ADDRESS()),
        (Long) conf.get(c.MAX_REMOTE_BLOCK_SIZE_FETCH_TO_MEM()),
        (Integer) conf.get(c.SHUFFLE_MAX_ATTEMPTS_ON_NETTY_OOM()),
        (Boolean) conf.get(c.SHUFFLE_DETECT_CORRUPT()),
        (Boolean) conf.get(c.SHUFFLE_DETECT_CORRUPT_MEMORY()),
        (Boolean) conf.get(c.SHUFFLE_CHECKSUM_ENABLED()),
        (String) conf.get(c.SHUFFLE_CHECKSUM_ALGORITHM()),
        metrics, batchFetch, ShuffleBlockFetcherIterator$.MODULE$.$lessinit$greater$default$18());
  }

  /**
   * Whether Spark's reader would fetch contiguous blocks in one batch (its private
   * {@code fetchContinuousBlocksInBatch}): only when concatenated blocks stay one valid stream.
   */
  public static boolean batchFetch(ShuffleDependency<?, ?, ?> dep, int startPartition, int endPartition,
      TaskContext context) {
    SparkConf conf = SparkEnv.get().conf();
    package$ c = package$.MODULE$;
    boolean compressed = (Boolean) conf.get(c.SHUFFLE_COMPRESS());
    boolean codecConcatenates = !compressed
        || CompressionCodec$.MODULE$.supportsConcatenationOfSerializedStreams(CompressionCodec$.MODULE$.createCodec(conf));
    return SortShuffleManager.canUseBatchFetch(startPartition, endPartition, context)
        && dep.serializer().supportsRelocationOfSerializedObjects() && codecConcatenates
        && !(Boolean) conf.get(c.SHUFFLE_USE_OLD_FETCH_PROTOCOL()) && !(Boolean) conf.get(c.IO_ENCRYPTION_ENABLED());
  }

  /**
   * Stops a fetcher for good: {@code cleanup()} releases its buffers, and its result queue is emptied
   * so that the task-completion listener's second {@code cleanup()} does not release them again.
   */
  public static void discardFetcher(ShuffleBlockFetcherIterator fetcher) {
    fetcher.cleanup();
    fetcher.org$apache$spark$storage$ShuffleBlockFetcherIterator$$results.clear();
  }

  /**
   * Forgets a fetch failure the task has recovered from. Constructing a {@code FetchFailedException}
   * records it on the task context ({@code TaskContextImpl._fetchFailedException}, private, no public
   * reset), and a recorded one would make any later error of the task count as a fetch failure and
   * unregister all of the failed executor's map outputs.
   */
  public static void clearFetchFailure(TaskContext context) {
    try {
      Field f = TaskContextImpl.class.getDeclaredField("_fetchFailedException");
      f.setAccessible(true);
      f.set(context, Option.empty());
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("Cannot reset the task's fetch failure on Spark " + runtimeSparkVersion(), e);
    }
  }

  /** Spark's external sorter with its default (no) row checksums (4.1 added that argument). */
  public static <K, V, C> ExternalSorter<K, V, C> sorter(TaskContext context, Option<Aggregator<K, V, C>> aggregator,
      Option<Ordering<K>> ordering, Serializer serializer) {
    return new ExternalSorter<>(context, aggregator, Option.empty(), ordering, serializer,
        ExternalSorter$.MODULE$.$lessinit$greater$default$6());
  }

  /** Throws {@code t} whatever its type (for checked exceptions Scala code throws undeclared). */
  @SuppressWarnings("unchecked")
  public static <E extends Throwable> RuntimeException rethrow(Throwable t) throws E {
    throw (E) t;
  }

  private static String majorMinor(String version) {
    String[] parts = version.split("[.-]");
    return parts.length >= 2 ? parts[0] + "." + parts[1] : version;
  }
}
