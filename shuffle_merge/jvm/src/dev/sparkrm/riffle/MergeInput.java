package dev.sparkrm.riffle;

import java.util.List;

/**
 * One map output to be merged: where it sits in the shuffle (index), which attempt wrote it (id), and
 * the local directories of the executor that wrote it when that is a neighbour on the host (empty for
 * the merging executor's own outputs, and in read plans).
 */
record MergeInput(int mapIndex, long mapId, List<String> dirs) {
  MergeInput(int mapIndex, long mapId) {
    this(mapIndex, mapId, List.of());
  }
}
