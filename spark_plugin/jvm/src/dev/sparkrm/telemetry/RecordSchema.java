package dev.sparkrm.telemetry;

import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.Function;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The fields of one telemetry record type, declared once.
 *
 * <p>The same declaration renders records (one JSON object per line) and describes them to Python
 * ({@link #describe}), which builds its Arrow schema from that description. Field kinds are
 * {@code int} (64-bit), {@code double}, {@code string}, {@code bool} and {@code int_list}.
 *
 * @param <T> the event view a record is rendered from
 */
public final class RecordSchema<T> {
  /** Jackson, from Spark's classpath, writes every value: escaping is not ours to get right. */
  private static final ObjectMapper JSON = new ObjectMapper();

  private final String type;
  private final List<String> names = new ArrayList<>();
  private final List<String> kinds = new ArrayList<>();
  private final List<Function<T, Object>> getters = new ArrayList<>();

  public RecordSchema(String type) {
    this.type = type;
  }

  public String type() {
    return type;
  }

  /** Declares the next field. */
  public RecordSchema<T> field(String name, String kind, Function<T, Object> getter) {
    names.add(name);
    kinds.add(kind);
    getters.add(getter);
    return this;
  }

  public List<String> names() {
    return Collections.unmodifiableList(names);
  }

  /** Renders the fields of {@code view} as {@code "name":value} pairs, comma separated. */
  public String renderFields(T view) {
    StringBuilder out = new StringBuilder(64 + 24 * names.size());
    for (int i = 0; i < names.size(); i++) {
      if (i > 0) out.append(',');
      out.append(json(names.get(i))).append(':').append(json(plain(getters.get(i).apply(view))));
    }
    return out.toString();
  }

  /** Describes the schema as JSON: {@code [["name","kind"], ...]}. */
  public String describe() {
    List<List<String>> fields = new ArrayList<>();
    for (int i = 0; i < names.size(); i++) fields.add(List.of(names.get(i), kinds.get(i)));
    return json(fields);
  }

  /** A value as telemetry records it: numbers, booleans, strings and int lists as they are, a non-finite
   *  double as null (JSON has no NaN), anything else by its {@code toString}. */
  private static Object plain(Object value) {
    if (value instanceof Double || value instanceof Float) {
      return Double.isFinite(((Number) value).doubleValue()) ? value : null;
    }
    if (value == null || value instanceof Number || value instanceof Boolean || value instanceof String
        || value instanceof long[]) {
      return value;
    }
    return value.toString();
  }

  private static String json(Object value) {
    try {
      return JSON.writeValueAsString(value);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }
}
