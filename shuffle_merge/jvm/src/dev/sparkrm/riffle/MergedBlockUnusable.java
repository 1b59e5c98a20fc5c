package dev.sparkrm.riffle;

/** A fetched merged block cannot be used (corrupt or unreadable); its originals must be read instead. */
final class MergedBlockUnusable extends RuntimeException {
  private static final long serialVersionUID = 1L;
  final long syntheticMapId;

  MergedBlockUnusable(long syntheticMapId, String message, Throwable cause) {
    super(message, cause);
    this.syntheticMapId = syntheticMapId;
  }
}
