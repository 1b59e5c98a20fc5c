package dev.sparkrm.conf;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Checks a file that a configuration key of kind {@code file} names: it exists, is readable and, when
 * its name ends in {@code .json} and the key has a schema, matches that schema.
 *
 * <p>The schema is a resource of this jar that the Python side reads too
 * ({@code spark_plugin/file_schema.py} documents its seven types); both walk a file the same way
 * and report its first problem in the same words, so Python refuses before a JVM starts exactly
 * what this refuses at plugin start-up. Every message is one line naming the key, the file, the
 * field and the fix.
 */
public final class FileSchema {
  private static final String ROOT = "the file";
  private static final ObjectMapper JSON = new ObjectMapper()
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS); // as Python's json.loads
  private static final Map<String, JsonNode> SCHEMAS = new ConcurrentHashMap<>();

  private FileSchema() {}

  /**
   * The one-line message when {@code value} of {@code key} does not name a usable file, else {@code null}.
   *
   * @param schema resource of the schema a {@code .json} file must match, or {@code null}
   * @param fix the sentence that ends every message
   */
  public static String fileProblem(String key, String value, String schema, String fix) {
    String where = key + "=" + printable(value);
    Path path;
    try {
      path = Path.of(value);
    } catch (InvalidPathException e) {
      return where + ": no such file. " + fix;
    }
    if (!Files.exists(path)) return where + ": no such file. " + fix;
    if (Files.isDirectory(path)) return where + " is a directory, not a file. " + fix;
    if (!Files.isRegularFile(path)) return where + " is not a regular file. " + fix;
    boolean json = schema != null && value.endsWith(".json");
    byte[] data;
    try {
      if (!json) {
        Files.newInputStream(path).close();
        return null;
      }
      data = Files.readAllBytes(path);
    } catch (AccessDeniedException e) {
      return where + " cannot be read (permission denied). " + fix;
    } catch (IOException e) {
      return where + " cannot be read (" + printable(String.valueOf(e.getMessage())) + "). " + fix;
    }
    JsonNode spec = schema(schema);
    JsonNode document;
    try {
      document = JSON.readTree(data);
    } catch (JsonProcessingException e) {
      return where + " cannot be read as JSON (" + printable(e.getOriginalMessage()) + "). " + fix;
    } catch (IOException e) {
      return where + " cannot be read as JSON (" + printable(String.valueOf(e.getMessage())) + "). " + fix;
    }
    if (document == null || document.isMissingNode()) {
      return where + " cannot be read as JSON (the file is empty). " + fix;
    }
    String problem = checkDocument(document, spec);
    if (problem == null) return null;
    return where + " is not a valid " + spec.path("title").asText() + ": " + problem + ". " + fix;
  }

  /** The first problem of a parsed document against a schema, or {@code null}. */
  public static String checkDocument(JsonNode document, JsonNode schema) {
    return new Walk(schema, document).check(document, schema.get("root"), "");
  }

  /** The schema stored in this jar at {@code resource}, parsed once. */
  static JsonNode schema(String resource) {
    return SCHEMAS.computeIfAbsent(resource, r -> {
      try (InputStream in = FileSchema.class.getResourceAsStream("/" + r)) {
        if (in == null) throw new IllegalStateException("The sparkrm jar lacks " + r + "; rebuild it");
        return new ObjectMapper().readTree(in);
      } catch (IOException e) {
        throw new UncheckedIOException("Cannot read " + r + " from the sparkrm jar", e);
      }
    });
  }

  /** {@code text} with every control or line-breaking character as {@code \\uXXXX}, so a message stays one line. */
  public static String printable(String text) {
    StringBuilder out = new StringBuilder(text.length());
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < 0x20 || c == 0x7f || c == 0x85 || c == 0x2028 || c == 0x2029) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    return out.toString();
  }

  /** What a JSON value is, in the words of every message (as {@code describe} in file_schema.py). */
  static String describe(JsonNode node) {
    if (node == null || node.isNull() || node.isMissingNode()) return "null";
    if (node.isBoolean()) return node.asBoolean() ? "true" : "false";
    if (node.isTextual()) return node.asText().isEmpty() ? "an empty string" : "a string";
    if (node.isNumber()) return finite(node) ? "a number" : "a number out of range";
    if (node.isArray()) return "an array of " + node.size() + (node.size() == 1 ? " entry" : " entries");
    return "an object";
  }

  private static boolean finite(JsonNode node) {
    return node != null && node.isNumber() && Double.isFinite(node.asDouble());
  }

  private static String join(String path, String name) {
    return path.isEmpty() ? printable(name) : path + "." + printable(name);
  }

  /** One walk over a document; {@code root} resolves the {@code length} of {@code numbers}. */
  private static final class Walk {
    private final JsonNode definitions;
    private final JsonNode root;

    Walk(JsonNode schema, JsonNode root) {
      this.definitions = schema.path("definitions");
      this.root = root;
    }

    JsonNode resolve(JsonNode spec) {
      return spec.has("ref") ? definitions.get(spec.get("ref").asText()) : spec;
    }

    private List<String> fieldNames(JsonNode fields) {
      List<String> names = new ArrayList<>();
      fields.fieldNames().forEachRemaining(names::add);
      return names;
    }

    String expected(JsonNode spec) {
      spec = resolve(spec);
      String kind = spec.get("type").asText();
      switch (kind) {
        case "object":
          return "an object with the fields " + String.join(", ", fieldNames(spec.get("fields")));
        case "map":
          return "an object whose every value is " + expected(spec.get("values"));
        case "const":
          return "\"" + spec.get("value").asText() + "\"";
        case "names":
          return "a non-empty array of non-empty strings";
        case "numbers": {
          String length = spec.get("length").asText();
          JsonNode of = root.isObject() ? root.get(length) : null;
          int n = of != null && of.isArray() ? of.size() : 0;
          String nulls = spec.path("nulls").asBoolean() ? " or nulls" : "";
          return "an array of " + n + (n == 1 ? " number" : " numbers") + nulls + " (one per entry of " + length + ")";
        }
        case "number":
          return "a number";
        case "pairs":
          return "a non-empty array of [a, b] pairs of numbers";
        default:
          throw new IllegalStateException("unknown schema type " + kind);
      }
    }

    String check(JsonNode node, JsonNode spec, String path) {
      spec = resolve(spec);
      String kind = spec.get("type").asText();
      String shown = path.isEmpty() ? ROOT : path;
      String wrong = shown + " must be " + expected(spec) + "; got " + describe(node);
      switch (kind) {
        case "object": {
          if (!node.isObject()) return wrong;
          JsonNode fields = spec.get("fields");
          for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
            String name = it.next();
            if (!fields.has(name)) {
              return join(path, name) + " is not a field of " + shown + "; its fields are "
                  + String.join(", ", fieldNames(fields));
            }
          }
          for (Iterator<Map.Entry<String, JsonNode>> it = fields.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> field = it.next();
            if (!node.has(field.getKey())) {
              return join(path, field.getKey()) + " is missing; it must be " + expected(field.getValue());
            }
            String problem = check(node.get(field.getKey()), field.getValue(), join(path, field.getKey()));
            if (problem != null) return problem;
          }
          return null;
        }
        case "map": {
          if (!node.isObject()) return wrong;
          for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> entry = it.next();
            String problem = check(entry.getValue(), spec.get("values"), join(path, entry.getKey()));
            if (problem != null) return problem;
          }
          return null;
        }
        case "const":
          return node.isTextual() && node.asText().equals(spec.get("value").asText()) ? null : wrong;
        case "names": {
          if (!node.isArray() || node.size() == 0) return wrong;
          for (int i = 0; i < node.size(); i++) {
            JsonNode item = node.get(i);
            if (!item.isTextual() || item.asText().isEmpty()) {
              return shown + "[" + i + "] must be a non-empty string; got " + describe(item);
            }
          }
          return null;
        }
        case "numbers": {
          JsonNode length = root.isObject() ? root.get(spec.get("length").asText()) : null;
          if (!node.isArray() || length == null || !length.isArray() || node.size() != length.size()) return wrong;
          boolean nulls = spec.path("nulls").asBoolean();
          for (int i = 0; i < node.size(); i++) {
            JsonNode item = node.get(i);
            if (!(finite(item) || (item.isNull() && nulls))) {
              return shown + "[" + i + "] must be a number" + (nulls ? " or null" : "") + "; got " + describe(item);
            }
          }
          return null;
        }
        case "number":
          return finite(node) ? null : wrong;
        case "pairs": {
          if (!node.isArray() || node.size() == 0) return wrong;
          for (int i = 0; i < node.size(); i++) {
            JsonNode pair = node.get(i);
            if (!pair.isArray() || pair.size() != 2) {
              return shown + "[" + i + "] must be an array of 2 numbers; got " + describe(pair);
            }
            for (int j = 0; j < 2; j++) {
              if (!finite(pair.get(j))) {
                return shown + "[" + i + "][" + j + "] must be a number; got " + describe(pair.get(j));
              }
            }
          }
          return null;
        }
        default:
          throw new IllegalStateException("unknown schema type " + kind);
      }
    }
  }
}
