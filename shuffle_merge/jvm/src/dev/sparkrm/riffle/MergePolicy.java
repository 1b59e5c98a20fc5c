package dev.sparkrm.riffle;

import dev.sparkrm.conf.SparkrmConf;
import java.util.ArrayList;
import java.util.List;

/**
 * Which map outputs of one host or executor are merged together. The same rules, in Python, are
 * {@code shuffle_merge.merge_policy}; a test checks that both form the same groups.
 */
public interface MergePolicy {
  /** A committed map output as the scheduler sees it. */
  record Output(int mapIndex, long mapId, String executorId, String host, long bytes, int partitions) {
    double averageBlock() {
      return partitions == 0 ? 0 : (double) bytes / partitions;
    }
  }

  /** Whether {@code o} may be merged at all. */
  boolean admits(Output o);

  /** Removes from {@code pending} (one host's or executor's queue, oldest first) and returns the groups to merge. */
  List<List<Output>> readyGroups(List<Output> pending);

  /** The leftover group formed at the end of the map stage from {@code pending} (at least two outputs). */
  List<Output> leftoverGroup(List<Output> pending);

  /**
   * The configured policy. Setting {@code merge.fanIn} without {@code merge.policy} asks for N-way
   * merging, so it selects {@code fanin} rather than being ignored under the default.
   */
  static MergePolicy fromConf(SparkrmConf conf) {
    String kind = conf.isSet("spark.riffle.merge.policy") || !conf.isSet("spark.riffle.merge.fanIn")
        ? conf.getString("spark.riffle.merge.policy") : "fanin";
    if ("blocksize".equals(kind)) {
      return new BlockSize(conf.getLong("spark.riffle.merge.targetBlockBytes"),
          (int) conf.getLong("spark.riffle.merge.maxFanIn"));
    }
    return new FanIn((int) conf.getLong("spark.riffle.merge.fanIn"));
  }

  /** N-way: every N pending outputs form a merge (thesis §3.3a). */
  record FanIn(int n) implements MergePolicy {
    @Override
    public boolean admits(Output o) {
      return true;
    }

    @Override
    public List<List<Output>> readyGroups(List<Output> pending) {
      List<List<Output>> groups = new ArrayList<>();
      while (pending.size() >= n) groups.add(take(pending, n));
      return groups;
    }

    @Override
    public List<Output> leftoverGroup(List<Output> pending) {
      return take(pending, pending.size());
    }
  }

  /**
   * Block size: outputs whose average block is below the target wait until the sum of their average
   * blocks reaches it, or until {@code maxFanIn} are pending (thesis §3.3b). Outputs whose own
   * average block reaches the target are never merged.
   */
  record BlockSize(long targetBytes, int maxFanIn) implements MergePolicy {
    @Override
    public boolean admits(Output o) {
      return o.averageBlock() < targetBytes;
    }

    @Override
    public List<List<Output>> readyGroups(List<Output> pending) {
      double sum = 0;
      for (Output o : pending) sum += o.averageBlock();
      List<List<Output>> groups = new ArrayList<>();
      if (!pending.isEmpty() && (sum >= targetBytes || pending.size() >= maxFanIn)) {
        groups.add(take(pending, Math.min(maxFanIn, pending.size())));
      }
      return groups;
    }

    @Override
    public List<Output> leftoverGroup(List<Output> pending) {
      return take(pending, Math.min(maxFanIn, pending.size()));
    }
  }

  private static List<Output> take(List<Output> pending, int count) {
    List<Output> group = new ArrayList<>(pending.subList(0, count));
    pending.subList(0, count).clear();
    return group;
  }
}
