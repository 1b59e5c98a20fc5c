package dev.sparkrm.riffle;

import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkConf;
import org.apache.spark.TaskContext;
import org.apache.spark.shuffle.BaseShuffleHandle;
import org.apache.spark.shuffle.ShuffleHandle;
import org.apache.spark.shuffle.ShuffleReadMetricsReporter;
import org.apache.spark.shuffle.ShuffleReader;
import org.apache.spark.shuffle.sort.SortShuffleManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Spark's sort shuffle plus Riffle: {@code --conf spark.shuffle.manager=dev.sparkrm.riffle.RiffleShuffleManager}.
 *
 * <p>Map tasks write exactly as with the sort shuffle. Executors merge finished map outputs in the
 * background ({@link RiffleExecutor}), and reduce tasks read merged outputs where the driver published
 * valid ones and the originals everywhere else ({@link RiffleShuffleReader}). Whether a shuffle takes
 * part is decided once, when the driver registers it ({@link RiffleFallback}); anything Riffle does not
 * handle, including every shuffle when the sparkrm plugin is not loaded, runs as plain sort shuffle.
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
    if (skip != null) {
      LOG.warn("Shuffle {} runs as vanilla sort shuffle: {}", shuffleId, skip);
    }
    driver.scheduler().registerShuffle(shuffleId, dependency.partitioner().numPartitions(), skip);
    return handle;
  }

  @Override
  public <K, C> ShuffleReader<K, C> getReader(ShuffleHandle handle, int startMapIndex, int endMapIndex,
      int startPartition, int endPartition, TaskContext context, ShuffleReadMetricsReporter metrics) {
    RiffleExecutor agent = RiffleExecutor.get();
    if (agent == null) {
      return super.getReader(handle, startMapIndex, endMapIndex, startPartition, endPartition, context, metrics);
    }
    @SuppressWarnings("unchecked")
    BaseShuffleHandle<K, ?, C> base = (BaseShuffleHandle<K, ?, C>) handle;
    return new RiffleShuffleReader<>(base, startMapIndex, endMapIndex, startPartition, endPartition, context,
        metrics, agent);
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
