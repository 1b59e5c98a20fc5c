package dev.sparkrm.riffle;

import org.apache.spark.shuffle.BaseShuffleHandle;
import org.apache.spark.shuffle.ShuffleHandle;

/**
 * The handle of a shuffle Riffle merges, which is how {@link RiffleShuffleManager} routes it: Spark's own
 * sort-shuffle handle rides inside and writes every map output; only the read differs. A shuffle Riffle
 * does not take keeps Spark's handle and is Spark's throughout.
 */
final class RiffleShuffleHandle extends ShuffleHandle {
  private static final long serialVersionUID = 1L;

  private final BaseShuffleHandle<?, ?, ?> sortHandle;

  RiffleShuffleHandle(BaseShuffleHandle<?, ?, ?> sortHandle) {
    super(sortHandle.shuffleId());
    this.sortHandle = sortHandle;
  }

  /** Spark's handle of this shuffle, the one its sort shuffle chose the writer by. */
  BaseShuffleHandle<?, ?, ?> sortHandle() {
    return sortHandle;
  }
}
