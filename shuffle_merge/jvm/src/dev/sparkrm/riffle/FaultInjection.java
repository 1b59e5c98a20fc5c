package dev.sparkrm.riffle;

import dev.sparkrm.conf.SparkrmConf;
import java.io.File;
import java.io.IOException;
import org.apache.spark.shuffle.IndexShuffleBlockResolver;

/**
 * Faults that tests switch on through {@code spark.riffle.test.*} keys, to prove that every failure
 * falls back to the original map outputs. All are off by default and cost nothing then.
 */
final class FaultInjection {
  private final double failFraction;
  private final long delayMs;
  private final boolean loseMerged;
  private final boolean peersUnreadable;

  FaultInjection(SparkrmConf conf) {
    this.failFraction = conf.getDouble("spark.riffle.test.failMergeFraction");
    this.delayMs = conf.getLong("spark.riffle.test.mergeDelay");
    this.loseMerged = conf.getBoolean("spark.riffle.test.loseMergedFiles");
    this.peersUnreadable = conf.getBoolean("spark.riffle.test.peerFilesUnreadable");
  }

  /**
   * Sleeps (slow merger), fails a deterministic fraction of merges (by group id), and fails host merges
   * as if their neighbours' directories could not be read.
   */
  void beforeMerge(MergeAssignment a) throws IOException, InterruptedException {
    if (peersUnreadable && a.inputs().stream().anyMatch(in -> !in.dirs().isEmpty())) {
      throw new MergeWriter.PeerFilesUnreadable("injected: neighbours' directories unreadable "
          + "(spark.riffle.test.peerFilesUnreadable)");
    }
    if (delayMs > 0) Thread.sleep(delayMs);
    if (failFraction > 0 && (a.groupId() * 0.6180339887) % 1.0 < failFraction) {
      throw new IOException("injected merge failure (spark.riffle.test.failMergeFraction)");
    }
  }

  /** Deletes a merged output right after it was committed, before any reader sees it. */
  void afterCommit(MergeAssignment a, IndexShuffleBlockResolver resolver) throws IOException {
    File data = resolver.getDataFile(a.shuffleId(), a.syntheticMapId());
    if (loseMerged && !data.delete()) throw new IOException("could not delete " + data + " for the lost-file fault");
  }
}
