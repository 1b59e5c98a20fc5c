package dev.sparkrm.riffle;

/**
 * How one merge ended on its executor, reported to the driver.
 *
 * @param status {@code committed}, {@code failed} or {@code cancelled}
 */
record MergeOutcome(MergeAssignment assignment, String status, String error, long inputBytes,
    long outputBytes, long queueWaitMs, long mergeMs, long bufferBytes) {}
