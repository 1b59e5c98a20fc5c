package dev.sparkrm.riffle;

/** One map output to be merged: where it sits in the shuffle (index) and which attempt wrote it (id). */
record MergeInput(int mapIndex, long mapId) {}
