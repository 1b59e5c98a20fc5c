package dev.sparkrm.conf;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * The check of the JSON file a {@code file} key names, by the system that owns the key. The system registers
 * it in {@code META-INF/services/dev.sparkrm.conf.JsonFileCheck} of its own source tree, so the
 * core names no system; Python names the same check in its key table ({@code Key.check}).
 */
public interface JsonFileCheck {
  /** The {@code file} key whose {@code .json} files this checks. */
  String key();

  /** What is wrong with the parsed file, as the rest of the message after the file's name; null if nothing. */
  String problem(JsonNode document);
}
