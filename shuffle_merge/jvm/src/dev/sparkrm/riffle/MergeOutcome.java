package dev.sparkrm.riffle;

/**
 * How one merge ended on its executor, reported to the driver.
 *
 * @param status          {@code committed}, {@code failed}, {@code cancelled} or {@code unreadable} (a
 *     neighbour's local directories could not be read)
 * @param waitedForMemory whether the merge queued for the merger's buffer memory before it started
 */
record MergeOutcome(MergeAssignment assignment, String status, String error, long inputBytes,
    long outputBytes, long queueWaitMs, long mergeMs, long bufferBytes, boolean waitedForMemory) {}
