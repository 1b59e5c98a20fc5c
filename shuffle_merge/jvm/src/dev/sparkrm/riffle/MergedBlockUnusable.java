package dev.sparkrm.riffle;

/**
 * A fetched merged block cannot be used (corrupt, truncated or unreadable) before any record of
 * the affected sub-block went out: what is left of it must be read from the original blocks.
 */
final class MergedBlockUnusable extends RuntimeException {
  private static final long serialVersionUID = 1L;
  final long syntheticMapId;

  MergedBlockUnusable(long syntheticMapId, String message, Throwable cause) {
    super(message, cause);
    this.syntheticMapId = syntheticMapId;
  }
}
