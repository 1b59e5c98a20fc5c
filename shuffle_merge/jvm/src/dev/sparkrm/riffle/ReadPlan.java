package dev.sparkrm.riffle;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;

/**
 * What the driver published about a shuffle's merged outputs, as a reader receives it.
 *
 * <p>The plan is advisory: the reader uses a group only after checking it against the map outputs
 * Spark has registered ({@link FetchPlan}), so stale or speculative information falls back to the
 * original files instead of producing wrong results.
 *
 * @param riffle whether Riffle applies to this shuffle at all (false: read as vanilla Spark)
 * @param sealed whether the map stage is over and the merged set final
 */
record ReadPlan(boolean riffle, boolean sealed, List<Group> groups) {
  /** No merged outputs: read every original. */
  static final ReadPlan UNMERGED = new ReadPlan(false, true, List.of());

  /**
   * One merged output: the synthetic map id it is stored under, the executor that wrote it, and the map
   * outputs it contains.
   */
  record Group(long groupId, long syntheticMapId, String merger, List<MergeInput> inputs) {}

  /** This plan without merge {@code syntheticMapId}. */
  ReadPlan without(long syntheticMapId) {
    return new ReadPlan(riffle, sealed, groups.stream().filter(g -> g.syntheticMapId() != syntheticMapId).toList());
  }

  static ReadPlan parse(JsonNode reply) {
    List<Group> groups = new ArrayList<>();
    for (JsonNode g : reply.path("groups")) {
      List<MergeInput> inputs = new ArrayList<>();
      for (JsonNode in : g.path("inputs")) inputs.add(new MergeInput(in.get(0).asInt(), in.get(1).asLong()));
      groups.add(new Group(g.path("groupId").asLong(), g.path("syntheticMapId").asLong(),
          g.path("merger").asText(null), inputs));
    }
    return new ReadPlan(reply.path("riffle").asBoolean(), reply.path("sealed").asBoolean(), groups);
  }
}
