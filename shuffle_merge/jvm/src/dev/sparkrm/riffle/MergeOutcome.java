package dev.sparkrm.riffle;

/**
 * How one merge ended on its executor, reported to the driver.
 *
 * @param status {@code committed}, {@code failed}, {@code cancelled} or {@code unreadable} (a neighbour's
 *     local directories could not be read)
 */
record MergeOutcome(MergeAssignment assignment, String status, String error, long inputBytes,
    long outputBytes, long queueWaitMs, long mergeMs, long bufferBytes) {}
