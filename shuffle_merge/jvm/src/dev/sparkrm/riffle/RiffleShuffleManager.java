package dev.sparkrm.riffle;

import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkConf;
import org.apache.spark.TaskContext;
import org.apache.spark.shuffle.BaseShuffleHandle;
import org.apache.spark.shuffle.ShuffleHandle;
import org.apache.spark.shuffle.ShuffleReadMetricsReporter;
import org.apache.spark.shuffle.ShuffleReader;
import org.apache.spark.shuffle.ShuffleWriteMetricsReporter;
import org.apache.spark.shuffle.ShuffleWriter;
import org.apache.spark.shuffle.sort.SortShuffleManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Spark's sort shuffle plus Riffle: {@code --conf spark.shuffle.manager=dev.sparkrm.riffle.RiffleShuffleManager}.
 *
 * <p>Map tasks write exactly as with the sort shuffle. Executors merge finished map outputs in the
 * background ({@link RiffleExecutor}), and reduce tasks read merged outputs where the driver published
 * valid ones and the originals everywhere else ({@link RiffleShuffleReader}). Whether a shuffle takes
 * part is decided once, when the driver registers it ({@link RiffleFallback}), and carried by its handle:
 * a shuffle Riffle takes gets a {@link RiffleShuffleHandle} (Spark's own inside); anything Riffle does not
 * handle, including every shuffle when the sparkrm plugin is not loaded, keeps Spark's handle and runs as
 * plain sort shuffle, its reader Spark's own.
 */
public class RiffleShuffleManager extends SortShuffleManager {
  private static final Logger LOG = LoggerFactory.getLogger(RiffleShuffleManager.class);

  private final SparkConf conf;
  private boolean missingPluginLogged;

  public RiffleShuffleManager(SparkConf conf) {
    super(conf);
    this.conf = conf;
  }

  @Override
  public <K, V, C> ShuffleHandle registerShuffle(int shuffleId, ShuffleDependency<K, V, C> dependency) {
    ShuffleHandle handle = super.registerShuffle(shuffleId, dependency);
    RiffleDriver driver = RiffleDriver.active();
    if (driver == null) {
      if (!missingPluginLogged) {
        missingPluginLogged = true;
        LOG.warn("spark.shuffle.manager is {} but Riffle is not running in the driver (spark.plugins lacks "
            + "dev.sparkrm.SparkrmPlugin, or spark.riffle.enabled=false): every shuffle stays vanilla.",
            getClass().getName());
      }
      return handle;
    }
    String skip = RiffleFallback.reasonToSkip(dependency, conf);
    driver.scheduler().registerShuffle(shuffleId, dependency.partitioner().numPartitions(), skip);
    if (skip != null) {
      LOG.warn("Shuffle {} runs as vanilla sort shuffle: {}", shuffleId, skip);
      return handle;
    }
    return new RiffleShuffleHandle((BaseShuffleHandle<?, ?, ?>) handle);
  }

  @Override
  public <K, V> ShuffleWriter<K, V> getWriter(ShuffleHandle handle, long mapId, TaskContext context,
      ShuffleWriteMetricsReporter metrics) {
    return super.getWriter(sortHandle(handle), mapId, context, metrics);
  }

  @Override
  public <K, C> ShuffleReader<K, C> getReader(ShuffleHandle handle, int startMapIndex, int endMapIndex,
      int startPartition, int endPartition, TaskContext context, ShuffleReadMetricsReporter metrics) {
    RiffleExecutor agent = RiffleExecutor.get();
    if (!(handle instanceof RiffleShuffleHandle) || agent == null) {
      return super.getReader(sortHandle(handle), startMapIndex, endMapIndex, startPartition, endPartition, context,
          metrics);
    }
    @SuppressWarnings("unchecked")
    BaseShuffleHandle<K, ?, C> base = (BaseShuffleHandle<K, ?, C>) sortHandle(handle);
    return new RiffleShuffleReader<>(base, startMapIndex, endMapIndex, startPartition, endPartition, context,
        metrics, agent);
  }

  /** Spark's own handle of a shuffle: inside ours when Riffle took it, else the one given. */
  private static ShuffleHandle sortHandle(ShuffleHandle handle) {
    return handle instanceof RiffleShuffleHandle riffle ? riffle.sortHandle() : handle;
  }

  @Override
  public boolean unregisterShuffle(int shuffleId) {
    RiffleExecutor agent = RiffleExecutor.get();
    if (agent != null) agent.removeShuffle(shuffleId);
    RiffleDriver driver = RiffleDriver.active();
    if (driver != null) driver.unregisterShuffle(shuffleId);
    return super.unregisterShuffle(shuffleId);
  }
}
