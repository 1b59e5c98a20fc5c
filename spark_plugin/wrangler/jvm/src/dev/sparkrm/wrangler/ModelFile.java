package dev.sparkrm.wrangler;

import com.fasterxml.jackson.annotation.JsonSetter;
import com.fasterxml.jackson.annotation.Nulls;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.cfg.CoercionAction;
import com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.type.LogicalType;
import dev.sparkrm.conf.JsonFileCheck;
import dev.sparkrm.conf.SparkrmConf;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The JSON model file of {@code spark.wrangler.model.path}, read into records with Jackson and checked before
 * anything uses it, so {@link WranglerModel#predict} cannot fail.
 *
 * <p>{@code dev/sparkrm/wrangler/model.schema.json} (a JSON Schema) says what a model is; Python checks a file
 * against it with the {@code jsonschema} library ({@code spark_plugin/wrangler/export.py}). Here a wrong
 * {@code format} tag is reported first (such a file is most likely no model at all); then the binding refuses a
 * value of a wrong type, a null where the schema has none, a missing field or one outside it; then what binding
 * lets through is checked in the schema's order (empty arrays and strings, pairs, finite numbers), and last
 * what JSON Schema cannot say: every vector has one entry per feature. A problem is
 * worded from the schema's descriptions, as Python words it, and registered with the core as the key's
 * {@link JsonFileCheck}, so the driver plugin refuses at start-up the files Python refuses.
 */
public final class ModelFile implements JsonFileCheck {
  private static final String SCHEMA_RESOURCE = "/dev/sparkrm/wrangler/model.schema.json";
  private static final JsonNode SCHEMA = schema();
  private static final String FORMAT = SCHEMA.at("/properties/format/const").asText();
  private static final ObjectMapper MAPPER = mapper();

  /** A model as the file holds it; null entries of the scaler are counters never seen in training. */
  record Model(String format, String[] features, Scaler scaler, Shared shared, Map<String, Linear> nodes) {}

  record Scaler(@JsonSetter(contentNulls = Nulls.SET) Double[] scale,
                @JsonSetter(contentNulls = Nulls.SET) Double[] offset) {}

  /** The multi-task model: its own linear SVM and the weights added for a node and for a workload. */
  record Shared(Double[] weights, double intercept, Double[][] sigmoids, Map<String, Double[]> nodes,
                Map<String, Double[]> workloads) {}

  /** One linear SVM and its sigmoid calibrators {@code [a, b]}. */
  record Linear(Double[] weights, double intercept, Double[][] sigmoids) {}

  @Override
  public String key() {
    return WranglerModel.KEY;
  }

  @Override
  public String problem(JsonNode document) {
    String problem = firstProblem(document);
    return problem == null ? null : "is not a valid " + SCHEMA.get("title").asText() + ": " + problem;
  }

  /** The model in {@code data}, a file that {@link #problem} accepted. */
  static Model read(byte[] data) throws IOException {
    return MAPPER.readValue(data, Model.class);
  }

  /**
   * A mapper that binds only what the schema allows. By default Jackson reads {@code "0.3"} as a number, a
   * number or {@code true} as a string, {@code " "} as a null entry, and ignores a missing field.
   */
  private static ObjectMapper mapper() {
    ObjectMapper mapper = JsonMapper.builder()
        .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES,
            DeserializationFeature.FAIL_ON_MISSING_CREATOR_PROPERTIES,
            DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES, DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
        .disable(MapperFeature.ALLOW_COERCION_OF_SCALARS)
        .defaultSetterInfo(JsonSetter.Value.forValueNulls(Nulls.FAIL, Nulls.FAIL)) // null only where the schema has it
        .build();
    mapper.coercionConfigDefaults().setCoercion(CoercionInputShape.EmptyString, CoercionAction.Fail);
    mapper.coercionConfigFor(LogicalType.Textual)
        .setCoercion(CoercionInputShape.Integer, CoercionAction.Fail)
        .setCoercion(CoercionInputShape.Float, CoercionAction.Fail)
        .setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail);
    return mapper;
  }

  private static String firstProblem(JsonNode document) {
    JsonNode format = document.path("format");
    if (!format.isMissingNode() && !FORMAT.equals(format.textValue())) return mustBe(List.of("format"), format);
    Model model;
    try {
      model = MAPPER.treeToValue(document, Model.class);
    } catch (UnrecognizedPropertyException e) {
      List<Object> path = path(e);
      List<Object> parent = path.subList(0, path.size() - 1);
      List<String> fields = new ArrayList<>();
      schemaAt(parent).path("properties").fieldNames().forEachRemaining(fields::add);
      return shown(path) + " is not a field of " + shown(parent) + "; its fields are " + String.join(", ", fields);
    } catch (JsonMappingException e) { // a value of a wrong type, or a missing field
      List<Object> path = path(e);
      JsonNode node = at(document, path);
      return node.isMissingNode() ? shown(path) + " is missing; it must be " + description(path) : mustBe(path, node);
    } catch (JsonProcessingException e) { // a tree is read already
      throw new IllegalStateException(e);
    }
    if (model == null) return mustBe(List.of(), document); // the file holds null
    List<Object> bad = firstBadValue(model);
    return bad != null ? mustBe(bad, at(document, bad)) : lengthProblem(model, document);
  }

  /** Where the first value is that binding lets through and the schema refuses, in the schema's order; else null. */
  private static List<Object> firstBadValue(Model m) {
    List<List<Object>> bad = new ArrayList<>();
    if (m.features().length == 0) bad.add(List.of("features"));
    for (int i = 0; i < m.features().length; i++) {
      if (m.features()[i].isEmpty()) bad.add(List.of("features", i));
    }
    nonFinite(bad, List.of("scaler", "scale"), m.scaler().scale());
    nonFinite(bad, List.of("scaler", "offset"), m.scaler().offset());
    Shared s = m.shared();
    linear(bad, List.of("shared"), new Linear(s.weights(), s.intercept(), s.sigmoids()));
    s.nodes().forEach((name, weights) -> nonFinite(bad, List.of("shared", "nodes", name), weights));
    s.workloads().forEach((name, weights) -> nonFinite(bad, List.of("shared", "workloads", name), weights));
    m.nodes().forEach((name, node) -> linear(bad, List.of("nodes", name), node));
    return bad.isEmpty() ? null : bad.get(0);
  }

  private static void linear(List<List<Object>> bad, List<Object> at, Linear linear) {
    nonFinite(bad, append(at, "weights"), linear.weights());
    if (!Double.isFinite(linear.intercept())) bad.add(append(at, "intercept"));
    List<Object> sigmoids = append(at, "sigmoids");
    if (linear.sigmoids().length == 0) bad.add(sigmoids);
    for (int i = 0; i < linear.sigmoids().length; i++) {
      if (linear.sigmoids()[i].length != 2) bad.add(append(sigmoids, i));
      nonFinite(bad, append(sigmoids, i), linear.sigmoids()[i]);
    }
  }

  /** Every entry of {@code vector} beyond a double's range (1e400 binds as infinity; a null is the scaler's). */
  private static void nonFinite(List<List<Object>> bad, List<Object> at, Double[] vector) {
    for (int i = 0; i < vector.length; i++) {
      if (vector[i] != null && !Double.isFinite(vector[i])) bad.add(append(at, i));
    }
  }

  /** The first vector whose length is not the number of features: a comparison JSON Schema cannot express. */
  private static String lengthProblem(Model m, JsonNode document) {
    Map<List<Object>, Double[]> vectors = new LinkedHashMap<>();
    vectors.put(List.of("scaler", "scale"), m.scaler().scale());
    vectors.put(List.of("scaler", "offset"), m.scaler().offset());
    vectors.put(List.of("shared", "weights"), m.shared().weights());
    m.shared().nodes().forEach((name, weights) -> vectors.put(List.of("shared", "nodes", name), weights));
    m.shared().workloads().forEach((name, weights) -> vectors.put(List.of("shared", "workloads", name), weights));
    m.nodes().forEach((name, node) -> vectors.put(List.of("nodes", name, "weights"), node.weights()));
    int n = m.features().length;
    for (Map.Entry<List<Object>, Double[]> vector : vectors.entrySet()) {
      if (vector.getValue().length != n) {
        return shown(vector.getKey()) + " must have as many entries as features (" + n + "); got "
            + describe(at(document, vector.getKey()));
      }
    }
    return null;
  }

  private static String mustBe(List<Object> path, JsonNode node) {
    return shown(path) + " must be " + description(path) + "; got " + describe(node);
  }

  /** The schema's words for what the value at {@code path} must be. */
  private static String description(List<Object> path) {
    return schemaAt(path).get("description").asText();
  }

  /** The part of the schema that describes the value at {@code path}. */
  private static JsonNode schemaAt(List<Object> path) {
    JsonNode schema = SCHEMA;
    for (Object step : path) {
      JsonNode properties = schema.path("properties");
      schema = resolved(step instanceof Integer ? schema.get("items")
          : properties.has((String) step) ? properties.get((String) step) : schema.get("additionalProperties"));
    }
    return schema;
  }

  /** {@code schema}, or the definition its {@code $ref} names. */
  private static JsonNode resolved(JsonNode schema) {
    return schema.has("$ref") ? SCHEMA.at(schema.get("$ref").asText().substring(1)) : schema;
  }

  /** Where Jackson failed: field names and array indices from the document's root. */
  private static List<Object> path(JsonMappingException e) {
    List<Object> path = new ArrayList<>();
    for (JsonMappingException.Reference step : e.getPath()) {
      path.add(step.getFieldName() != null ? step.getFieldName() : (Object) step.getIndex());
    }
    return path;
  }

  private static JsonNode at(JsonNode node, List<Object> path) {
    for (Object step : path) node = step instanceof Integer i ? node.path(i) : node.path((String) step);
    return node;
  }

  private static List<Object> append(List<Object> path, Object step) {
    List<Object> longer = new ArrayList<>(path);
    longer.add(step);
    return longer;
  }

  /** A place in a model as messages name it: {@code the file}, {@code scaler.scale}, {@code shared.sigmoids[0][1]}. */
  static String shown(List<Object> path) {
    StringBuilder shown = new StringBuilder();
    for (Object step : path) {
      if (step instanceof Integer) {
        shown.append('[').append(step).append(']');
      } else {
        String name = SparkrmConf.printable((String) step);
        shown.append(shown.length() == 0 ? "" : ".").append(name.isEmpty() ? "\"\"" : name);
      }
    }
    return shown.length() == 0 ? "the file" : shown.toString();
  }

  /** What a JSON value is, in the words of every message (as {@code describe} in export.py). */
  static String describe(JsonNode node) {
    if (node.isNull()) return "null";
    if (node.isBoolean()) return node.asBoolean() ? "true" : "false";
    if (node.isTextual()) return node.asText().isEmpty() ? "an empty string" : "a string";
    if (node.isNumber()) return Double.isFinite(node.asDouble()) ? "a number" : "a number out of range";
    if (node.isArray()) return "an array of " + node.size() + (node.size() == 1 ? " entry" : " entries");
    return "an object";
  }

  private static JsonNode schema() {
    try (InputStream in = ModelFile.class.getResourceAsStream(SCHEMA_RESOURCE)) {
      if (in == null) throw new IllegalStateException("The sparkrm jar lacks " + SCHEMA_RESOURCE + "; rebuild it");
      return new ObjectMapper().readTree(in);
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot read " + SCHEMA_RESOURCE + " from the sparkrm jar", e);
    }
  }
}
