package dev.sparkrm.riffle;

/**
 * A merged block failed after some of its records were used: the read cannot fall back without
 * emitting records twice, so the task must fail (and the merge is no longer used).
 */
final class MergedBlockFailed extends RuntimeException {
  private static final long serialVersionUID = 1L;
  final long syntheticMapId;
  final int mapIndex;
  final int reduceId;

  MergedBlockFailed(long syntheticMapId, int mapIndex, int reduceId, String message, Throwable cause) {
    super(message, cause);
    this.syntheticMapId = syntheticMapId;
    this.mapIndex = mapIndex;
    this.reduceId = reduceId;
  }
}
