package dev.sparkrm.riffle;

import dev.sparkrm.riffle.RiffleScheduler.Orphan;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.internal.config.package$;
import org.apache.spark.network.shuffle.BlockStoreClient;
import org.apache.spark.network.shuffle.ExternalBlockStoreClient;
import org.apache.spark.shuffle.IndexShuffleBlockResolver;
import org.apache.spark.storage.ShuffleDataBlockId;
import org.apache.spark.storage.ShuffleIndexBlockId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deletes the merged files of executors that are gone through the external shuffle service that
 * serves them, as Spark deletes their original map outputs when a shuffle is cleaned up
 * ({@code spark.shuffle.service.removeShuffle}). Live executors delete their own. Without a shuffle
 * service (or with that key off) such files, like Spark's originals, go with the application's
 * directories.
 */
final class ShuffleServiceCleaner {
  private static final Logger LOG = LoggerFactory.getLogger(ShuffleServiceCleaner.class);

  private final boolean enabled;
  private final int port;

  ShuffleServiceCleaner(SparkConf conf) {
    package$ keys = package$.MODULE$;
    this.enabled = (Boolean) conf.get(keys.SHUFFLE_SERVICE_ENABLED())
        && (Boolean) conf.get(keys.SHUFFLE_SERVICE_REMOVE_SHUFFLE_ENABLED());
    this.port = (Integer) conf.get(keys.SHUFFLE_SERVICE_PORT());
  }

  /** Asks each orphan's shuffle service to delete its data and index files (without waiting). */
  void remove(int shuffleId, List<Orphan> orphans) {
    if (!enabled || orphans.isEmpty()) return;
    BlockStoreClient client = SparkEnv.get().blockManager().blockStoreClient();
    if (!(client instanceof ExternalBlockStoreClient service)) return;
    Map<List<String>, List<String>> blocks = new LinkedHashMap<>(); // [host, executor] -> block ids
    for (Orphan o : orphans) {
      if (o.host() == null) continue;
      List<String> ids = blocks.computeIfAbsent(List.of(o.host(), o.executorId()), k -> new ArrayList<>());
      int reduceId = IndexShuffleBlockResolver.NOOP_REDUCE_ID(); // one data and one index file per map output
      ids.add(new ShuffleDataBlockId(shuffleId, o.syntheticMapId(), reduceId).name());
      ids.add(new ShuffleIndexBlockId(shuffleId, o.syntheticMapId(), reduceId).name());
    }
    blocks.forEach((where, ids) -> {
      try {
        service.removeBlocks(where.get(0), port, where.get(1), ids.toArray(String[]::new));
        LOG.info("Riffle asked the shuffle service on {} to delete {} merged files of shuffle {} left by "
            + "executor {}", where.get(0), ids.size(), shuffleId, where.get(1));
      } catch (IOException | InterruptedException e) {
        if (e instanceof InterruptedException) Thread.currentThread().interrupt();
        LOG.warn("Riffle could not ask the shuffle service on {} to delete the merged files of shuffle {} left by "
            + "executor {} ({}); they go with the application's directories", where.get(0), shuffleId,
            where.get(1), e.toString());
      }
    });
  }
}
