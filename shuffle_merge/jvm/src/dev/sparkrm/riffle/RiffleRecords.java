package dev.sparkrm.riffle;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sparkrm.riffle.RiffleScheduler.Group;
import dev.sparkrm.riffle.RiffleScheduler.ShuffleState;
import dev.sparkrm.telemetry.RecordSchema;
import dev.sparkrm.telemetry.TelemetryStore;

/**
 * Riffle's telemetry records: one per merge (how it ended and what it cost), one per shuffle when
 * its merged set is sealed, and one per reduce task (what it read, merged and original).
 */
final class RiffleRecords implements RiffleEvents {
  static final RecordSchema<Group> MERGE = new RecordSchema<Group>("merge")
      .field("groupId", "int", g -> g.id)
      .field("shuffleId", "int", g -> g.shuffle.shuffleId)
      .field("generation", "int", g -> g.generation)
      .field("executorId", "string", g -> g.executorId)
      .field("scope", "string", g -> g.scope)
      .field("host", "string", g -> g.inputs.get(0).host())
      .field("fanIn", "int", g -> g.inputs.size())
      .field("mapIndexes", "int_list", g -> g.inputs.stream().mapToLong(MergePolicy.Output::mapIndex).toArray())
      .field("status", "string", g -> g.status)
      .field("reason", "string", g -> g.reason)
      .field("issuedTime", "int", g -> g.issuedAt)
      .field("endTime", "int", g -> g.endedAt)
      .field("inputBytes", "int", g -> reported(g, "inputBytes"))
      .field("outputBytes", "int", g -> reported(g, "outputBytes"))
      .field("queueWaitMs", "int", g -> reported(g, "queueWaitMs"))
      .field("memoryWaits", "int", g -> reported(g, "memoryWaits"))
      .field("mergeMs", "int", g -> reported(g, "mergeMs"))
      .field("bufferBytes", "int", g -> reported(g, "bufferBytes"))
      .field("peakBufferBytes", "int", g -> reported(g, "peakBufferBytes"));

  static final RecordSchema<ShuffleState> SHUFFLE = new RecordSchema<ShuffleState>("shuffle_merge")
      .field("shuffleId", "int", s -> s.shuffleId)
      .field("generation", "int", s -> s.generation)
      .field("partitions", "int", s -> s.partitions)
      .field("outputs", "int", s -> s.outputs)
      .field("issuedOutputs", "int", s -> s.issuedOutputs)
      .field("mergedOutputs", "int", s -> s.committedOutputs)
      .field("stageDoneTime", "int", s -> s.stageDoneAt)
      .field("sealTime", "int", s -> s.sealedAt)
      .field("sealWaitMs", "int", s -> s.sealedAt - s.stageDoneAt)
      .field("sealReason", "string", s -> s.sealReason);

  static final RecordSchema<JsonNode> READ = readSchema();

  private final TelemetryStore store;

  RiffleRecords(TelemetryStore store) {
    this.store = store;
    store.register(MERGE);
    store.register(SHUFFLE);
    store.register(READ);
  }

  @Override
  public void mergeEnded(Group group) {
    store.record(MERGE, group);
  }

  @Override
  public void shuffleSealed(ShuffleState shuffle) {
    store.record(SHUFFLE, shuffle);
  }

  void read(JsonNode stats) {
    store.record(READ, stats);
  }

  private static RecordSchema<JsonNode> readSchema() {
    RecordSchema<JsonNode> s = new RecordSchema<>("shuffle_read");
    s.field("executorId", "string", n -> n.path("executorId").asText(null));
    for (String f : new String[] {"shuffleId", "stageId", "stageAttempt", "taskId", "startPartition",
        "endPartition", "startMapIndex", "endMapIndex", "mergedBlocks", "originalBlocks", "mergedBytes",
        "coveredBlocks", "expectedBlocks", "vanillaReads", "groupsUsed", "groupsPartial", "groupsRejected", "fallbacks",
        "badMergedBlocks", "spilledSubBlocks", "planWaitMs"}) {
      s.field(f, "int", n -> n.path(f).asLong());
    }
    return s;
  }

  private static Long reported(Group g, String field) {
    return g.report == null || !g.report.has(field) ? null : g.report.get(field).asLong();
  }
}
