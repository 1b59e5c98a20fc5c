package dev.sparkrm.riffle;

import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkConf;

/**
 * The rules under which a shuffle runs as plain sort shuffle instead of with Riffle. Each returns
 * its reason, naming the setting involved, or {@code null} when Riffle applies.
 *
 * <p>Serializer, codec and IO encryption need no rule: merged blocks keep the original sub-blocks,
 * each decompressed, decrypted and deserialized on its own.
 */
final class RiffleFallback {
  private RiffleFallback() {}

  static String reasonToSkip(ShuffleDependency<?, ?, ?> dependency, SparkConf conf) {
    if (dependency.shuffleMergeEnabled() || conf.getBoolean("spark.shuffle.push.enabled", false)) {
      return "push-based shuffle (spark.shuffle.push.enabled) already merges this shuffle's outputs";
    }
    if (dependency.partitioner().numPartitions() == 0) {
      return "the shuffle has no reduce partitions";
    }
    return null;
  }
}
