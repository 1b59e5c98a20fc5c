package dev.sparkrm.rpc;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * Executor-to-driver messages of the plugin RPC, dispatched by their {@code type}.
 *
 * <p>Messages are JSON strings, so no class of ours has to be loadable by Spark's RPC threads. A
 * message may carry one attachment beside its JSON (sent as a two-element {@code Object[]}): an
 * executor's RPC endpoint reference, which Spark binds to the executor's connection as it arrives, so
 * that the driver can send to it. Spark's plugin endpoint handles one message at a time: handlers
 * must answer at once and never block.
 */
public final class MessageRouter {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final Map<String, BiFunction<JsonNode, Object, Object>> handlers = new ConcurrentHashMap<>();

  /** Registers the handler of one message type; its return value is the reply ({@code null} for send). */
  public void on(String type, Function<JsonNode, Object> handler) {
    handlers.put(type, (node, attachment) -> handler.apply(node));
  }

  /** As {@link #on}, for a message type that comes with an attachment ({@code null} when it came without). */
  public void onAttached(String type, BiFunction<JsonNode, Object, Object> handler) {
    handlers.put(type, handler);
  }

  /** Dispatches one received message. */
  public Object dispatch(Object message) {
    Object attachment = null;
    if (message instanceof Object[] parts && parts.length == 2) {
      message = parts[0];
      attachment = parts[1];
    }
    JsonNode node = parse(message);
    String type = node.path("type").asText("");
    BiFunction<JsonNode, Object, Object> handler = handlers.get(type);
    if (handler == null) {
      throw new IllegalArgumentException("sparkrm driver has no handler for message type '" + type + "'");
    }
    return handler.apply(node, attachment);
  }

  /** Encodes a message: {@code type} plus the given fields. */
  public static String encode(String type, Map<String, Object> fields) {
    Map<String, Object> all = new java.util.LinkedHashMap<>();
    all.put("type", type);
    all.putAll(fields);
    return toJson(all);
  }

  /** Encodes a message that carries {@code attachment} (serializable) beside its JSON. */
  public static Object[] encodeAttached(String type, Map<String, Object> fields, Object attachment) {
    return new Object[] {encode(type, fields), attachment};
  }

  /** JSON text of a reply made of maps, lists, arrays, strings, numbers and booleans. */
  public static String toJson(Object value) {
    try {
      return JSON.writeValueAsString(value);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Parses a message or reply. */
  public static JsonNode parse(Object message) {
    if (!(message instanceof String)) {
      throw new IllegalArgumentException("sparkrm messages are JSON strings, got "
          + (message == null ? "null" : message.getClass().getName()));
    }
    try {
      return JSON.readTree((String) message);
    } catch (IOException e) {
      throw new IllegalArgumentException("Malformed sparkrm message: " + message, e);
    }
  }
}
