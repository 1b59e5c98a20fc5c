package dev.sparkrm.riffle;

import java.util.List;

/** A merge the driver asked an executor to run. */
record MergeAssignment(long groupId, int shuffleId, long syntheticMapId, List<MergeInput> inputs) {}
