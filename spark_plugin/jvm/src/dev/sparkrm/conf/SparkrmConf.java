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
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;
import org.apache.spark.SparkConf;
import org.apache.commons.text.similarity.LevenshteinDistance;
import org.apache.spark.network.util.JavaUtils;
import scala.Tuple2;

/**
 * The validated sparkrm configuration of one application.
 *
 * <p>The keys, their kinds, bounds and messages come from {@code dev/sparkrm/keys.json}, which the
 * jar build writes from the Python key table ({@code spark_plugin/keys.py}), so Python and the
 * JVM accept exactly the same values and report them with the same words. Sizes and durations use
 * Spark's own parsers. A key of kind {@code file} names a file on the driver: {@link #validateOnDriver}
 * also checks that file ({@link #fileProblem}); executors, where the file need not exist, do not.
 */
public final class SparkrmConf {
  private static final String RESOURCE = "/dev/sparkrm/keys.json";
  private static final Pattern INT = Pattern.compile("[+-]?\\d+");
  private static final Pattern DOUBLE = Pattern.compile("[+-]?(\\d+(\\.\\d*)?|\\.\\d+)([eE][+-]?\\d+)?");
  private static final ObjectMapper JSON = new ObjectMapper()
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS); // as Python's json.loads

  private final Map<String, Object> values;
  private final Set<String> given;

  private SparkrmConf(Map<String, Object> values, Set<String> given) {
    this.values = values;
    this.given = given;
  }

  /**
   * Validates every key of {@code conf} in our namespaces.
   *
   * @throws SparkrmConfigException listing each unknown key and each bad value, one per line
   */
  public static SparkrmConf validate(SparkConf conf) {
    return validate(entries(conf));
  }

  /** Same as {@link #validate(SparkConf)} for a plain map (used by the tests through py4j). */
  public static SparkrmConf validate(Map<String, String> given) {
    return validate(given, true, false);
  }

  /**
   * Validates as {@link #validate(SparkConf)} does and also checks the file every {@code file} key names
   * (it exists, is readable and, for a {@code .json} file with a schema, matches it), as Python's
   * {@code KeyTable.validate} does before a JVM starts. For the driver only.
   *
   * @throws SparkrmConfigException listing each unknown key, bad value, broken rule and bad file, one per line
   */
  public static SparkrmConf validateOnDriver(SparkConf conf) {
    return validateOnDriver(entries(conf));
  }

  private static Map<String, String> entries(SparkConf conf) {
    Map<String, String> given = new TreeMap<>();
    for (Tuple2<String, String> kv : conf.getAll()) given.put(kv._1(), kv._2());
    return given;
  }

  /** Same as {@link #validateOnDriver(SparkConf)} for a plain map (used by the tests through py4j). */
  public static SparkrmConf validateOnDriver(Map<String, String> given) {
    return validate(given, true, true);
  }

  /**
   * The one-line message when {@code value} of the {@code file} key {@code key} does not name a usable file,
   * else {@code null}: it must exist and be readable and, when its name ends in {@code .json} and a
   * {@link JsonFileCheck} is registered for the key, be JSON that passes that check. Python's
   * {@code Key.file_problem} checks the same in the same words; every message is one line naming the key,
   * the file, the problem and the fix.
   */
  public static String fileProblem(String key, String value) {
    JsonNode spec = KeyTable.load().keys.get(key);
    if (spec == null || !"file".equals(spec.get("kind").asText())) {
      throw new IllegalArgumentException(key + " is not a file key of the sparkrm key table");
    }
    String where = key + "=" + printable(value);
    String fix = spec.get("fix").asText();
    Path path;
    try {
      path = Path.of(value);
    } catch (InvalidPathException e) {
      return where + ": no such file. " + fix;
    }
    if (!Files.exists(path)) return where + ": no such file. " + fix;
    if (Files.isDirectory(path)) return where + " is a directory, not a file. " + fix;
    if (!Files.isRegularFile(path)) return where + " is not a regular file. " + fix;
    JsonFileCheck check = value.endsWith(".json") ? FileChecks.BY_KEY.get(key) : null;
    byte[] data;
    try {
      if (check == null) {
        Files.newInputStream(path).close();
        return null;
      }
      data = Files.readAllBytes(path);
    } catch (AccessDeniedException e) {
      return where + " cannot be read (permission denied). " + fix;
    } catch (IOException e) {
      return where + " cannot be read (" + printable(String.valueOf(e.getMessage())) + "). " + fix;
    }
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
    String problem = check.problem(document);
    return problem == null ? null : where + " " + problem + ". " + fix;
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

  /**
   * Validates the keys and values of {@code given} only, for a job's overrides of single keys (the
   * rules between keys hold for the whole application, which was validated when it started).
   */
  public static SparkrmConf validateValues(Map<String, String> given) {
    return validate(given, false, false);
  }

  private static SparkrmConf validate(Map<String, String> given, boolean rules, boolean files) {
    KeyTable table = KeyTable.load();
    List<String> problems = new ArrayList<>();
    for (String name : new TreeMap<>(given).keySet()) {
      if (table.inNamespace(name) && !table.keys.containsKey(name)) {
        problems.add(table.unknownKeyError(name));
      } else {
        String nearMiss = table.nearMissError(name);
        if (nearMiss != null) problems.add(nearMiss);
      }
    }
    Map<String, Object> values = new HashMap<>();
    for (JsonNode key : table.keys.values()) {
      String name = key.get("name").asText();
      String raw = given.containsKey(name) ? given.get(name) : textOrNull(key.get("default"));
      if (raw == null) continue;
      Object value = parse(key, raw.trim());
      if (value == null || !inRange(key, value)) {
        problems.add(name + " must be " + key.get("expected").asText() + ". Got '" + printable(raw) + "'. "
            + key.get("fix").asText());
      } else {
        values.put(name, value);
      }
    }
    for (JsonNode rule : rules ? table.rules : List.<JsonNode>of()) {
      String violation = violation(rule, given, table);
      if (violation != null) problems.add(violation);
    }
    for (JsonNode key : files ? table.keys.values() : List.<JsonNode>of()) {
      String name = key.get("name").asText();
      if (!"file".equals(key.get("kind").asText()) || !values.containsKey(name)) continue;
      String problem = fileProblem(name, (String) values.get(name));
      if (problem != null) problems.add(problem);
    }
    if (!problems.isEmpty()) throw new SparkrmConfigException(String.join("\n", problems));
    return new SparkrmConf(values, Set.copyOf(given.keySet()));
  }

  /** Keys a job may override through its local properties (flagged in the Python key table). */
  public static List<String> perJobKeys() {
    return KeyTable.load().perJob;
  }

  /** Prefix of the local properties that override a per-job key ({@code spark.} dropped). */
  public static String jobPrefix() {
    return KeyTable.load().jobPrefix;
  }

  public boolean getBoolean(String key) {
    return (Boolean) require(key);
  }

  /** An int, size (bytes) or duration (milliseconds) key. */
  public long getLong(String key) {
    return (Long) require(key);
  }

  public double getDouble(String key) {
    return (Double) require(key);
  }

  /** Whether {@code key} was given (its value is not the default). */
  public boolean isSet(String key) {
    return given.contains(key);
  }

  /** A string or enum key, or {@code null} when unset and without default. */
  public String getString(String key) {
    return (String) values.get(key);
  }

  /** Parsed values of every key that is set or has a default, for logging. */
  public Map<String, Object> asMap() {
    return new TreeMap<>(values);
  }

  private Object require(String key) {
    Object v = values.get(key);
    if (v == null) throw new IllegalStateException("No value and no default for " + key);
    return v;
  }

  private static Object parse(JsonNode key, String text) {
    String lower = text.toLowerCase(Locale.ROOT);
    try {
      switch (key.get("kind").asText()) {
        case "bool":
          return lower.equals("true") ? Boolean.TRUE : lower.equals("false") ? Boolean.FALSE : null;
        case "int":
          return INT.matcher(text).matches() ? Long.valueOf(Long.parseLong(text)) : null;
        case "double":
          return DOUBLE.matcher(text).matches() ? Double.valueOf(Double.parseDouble(text)) : null;
        case "size":
          return JavaUtils.byteStringAsBytes(text);
        case "duration":
          return JavaUtils.timeStringAsMs(text);
        case "enum":
          for (JsonNode option : key.get("options")) {
            if (option.asText().equals(lower)) return lower;
          }
          return null;
        default:
          return text.isEmpty() ? null : text;
      }
    } catch (IllegalArgumentException e) { // NumberFormatException, and ByteUnit's overflow of a long
      return null;
    }
  }

  /** The message when {@code given} breaks {@code rule} (see {@code Rule} in spark_plugin/config.py), else null. */
  private static String violation(JsonNode rule, Map<String, String> given, KeyTable table) {
    String when = rule.get("when").asText();
    JsonNode whenKey = table.keys.get(when);
    String switchValue = given.containsKey(when) ? given.get(when)
        : whenKey == null ? null : textOrNull(whenKey.get("default"));
    String whenValue = rule.get("whenValue").asText();
    if (switchValue == null || !switchValue.trim().toLowerCase(Locale.ROOT).equals(whenValue)) return null;
    String key = rule.get("key").asText();
    String actual = given.getOrDefault(key, rule.get("unset").asText()).trim();
    String must = textOrNull(rule.get("must"));
    String mustNot = textOrNull(rule.get("mustNot"));
    String why = rule.get("why").asText();
    String lower = actual.toLowerCase(Locale.ROOT); // not equalsIgnoreCase: Python compares lower-cased strings
    if (must != null && !lower.equals(must.toLowerCase(Locale.ROOT))) {
      return when + "=" + whenValue + " needs " + key + "=" + must + ", but " + key + " is '"
          + printable(actual) + "'. " + why;
    }
    if (mustNot != null && lower.equals(mustNot.toLowerCase(Locale.ROOT))) {
      return when + "=" + whenValue + " cannot run with " + key + "=" + printable(actual) + ". " + why;
    }
    return null;
  }

  private static boolean inRange(JsonNode key, Object value) {
    if (!(value instanceof Number)) return true;
    double v = ((Number) value).doubleValue();
    JsonNode low = key.get("low");
    JsonNode high = key.get("high");
    if (!low.isNull() && (v < low.asDouble() || (key.get("lowOpen").asBoolean() && v == low.asDouble()))) {
      return false;
    }
    return high.isNull() || !(v > high.asDouble() || (key.get("highOpen").asBoolean() && v == high.asDouble()));
  }

  private static String textOrNull(JsonNode node) {
    return node == null || node.isNull() ? null : node.asText();
  }

  /** The registered {@link JsonFileCheck}s by key, found on first use (only a driver checks files). */
  private static final class FileChecks {
    static final Map<String, JsonFileCheck> BY_KEY = new HashMap<>();

    static {
      ServiceLoader.load(JsonFileCheck.class, SparkrmConf.class.getClassLoader()).forEach(c -> BY_KEY.put(c.key(), c));
    }
  }

  /** The key table resource, parsed once per JVM. */
  private static final class KeyTable {
    private static KeyTable instance;
    final Map<String, JsonNode> keys = new TreeMap<>();
    final List<String> namespaces = new ArrayList<>();
    final List<JsonNode> rules = new ArrayList<>();
    final List<String> perJob = new ArrayList<>();
    String jobPrefix;

    static synchronized KeyTable load() {
      if (instance == null) instance = new KeyTable();
      return instance;
    }

    private KeyTable() {
      try (InputStream in = SparkrmConf.class.getResourceAsStream(RESOURCE)) {
        if (in == null) throw new IllegalStateException("The sparkrm jar lacks " + RESOURCE + "; rebuild it");
        JsonNode root = new ObjectMapper().readTree(in);
        for (JsonNode ns : root.get("namespaces")) namespaces.add(ns.asText());
        for (JsonNode key : root.get("keys")) {
          keys.put(key.get("name").asText(), key);
          if (key.get("perJob").asBoolean()) perJob.add(key.get("name").asText());
        }
        for (JsonNode rule : root.get("rules")) rules.add(rule);
        jobPrefix = root.get("jobPrefix").asText();
      } catch (IOException e) {
        throw new UncheckedIOException("Cannot read " + RESOURCE + " from the sparkrm jar", e);
      }
    }

    boolean inNamespace(String name) {
      for (String ns : namespaces) {
        if (name.startsWith(ns)) return true;
      }
      return false;
    }

    String unknownKeyError(String name) {
      String best = nearest(name);
      String hint = best != null ? " Did you mean " + best + "?" : "";
      return printable(name) + " is not a sparkrm configuration key." + hint
          + " Remove it, or see docs/configuration.md.";
    }

    /** The declared key nearest to {@code name} if at most max(2, len/5) edits away (ties: first by name). */
    private String nearest(String name) {
      String best = null;
      int bestDistance = Integer.MAX_VALUE;
      for (String candidate : keys.keySet()) {
        int d = LevenshteinDistance.getDefaultInstance().apply(name, candidate);
        if (d < bestDistance) {
          best = candidate;
          bestDistance = d;
        }
      }
      return best != null && bestDistance <= Math.max(2, best.length() / 5) ? best : null;
    }

    /** A key whose namespace is a typo of ours ({@code spark.rifle.*}), as spark_plugin/config.py decides. */
    String nearMissError(String name) {
      String[] parts = name.split("\\.", 3);
      if (parts.length < 3 || !parts[0].equals("spark") || inNamespace(name)) return null;
      for (String namespace : namespaces) {
        String segment = namespace.split("\\.")[1];
        int d = LevenshteinDistance.getDefaultInstance().apply(parts[1], segment);
        if (d > 0 && d <= 2) {
          String best = nearest("spark." + segment + "." + parts[2]);
          if (best != null) {
            return printable(name) + " is not a sparkrm configuration key (spark."
                + printable(parts[1]) + " is not a sparkrm "
                + "namespace). Did you mean " + best + "? Fix the name, or remove it.";
          }
        }
      }
      return null;
    }
  }
}
