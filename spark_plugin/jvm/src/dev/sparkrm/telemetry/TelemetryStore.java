package dev.sparkrm.telemetry;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeoutException;
import java.util.zip.GZIPOutputStream;

/**
 * The driver's bounded in-memory log of telemetry records, read from Python in batches.
 *
 * <p>Each record is one JSON line with a sequence number ({@code seq}, from 1) and a {@code type}.
 * Python remembers the last {@code seq} it read and asks for the next batch with {@link #fetch};
 * nothing calls back into Python per event. When more than {@code capacity} records accumulate
 * the oldest are dropped from memory, never from the file sink; {@link #firstSeq} lets a reader
 * tell how many it missed. All methods are thread-safe.
 */
public final class TelemetryStore {
  private static volatile TelemetryStore active;

  private final int capacity;
  private final List<RecordSchema<?>> schemas = new CopyOnWriteArrayList<>(Records.ALL);
  private final ArrayDeque<String> lines = new ArrayDeque<>();
  private long nextSeq = 1;
  private TelemetryFileSink sink;
  private volatile ListenerBusDrain drain = timeoutMs -> { };

  /** Waits until the listener bus has delivered every posted event. */
  @FunctionalInterface
  public interface ListenerBusDrain {
    void await(long timeoutMs) throws TimeoutException;
  }

  public TelemetryStore(int capacity) {
    this.capacity = capacity;
  }

  /** The store of the running application, or {@code null} when telemetry is off. */
  public static TelemetryStore active() {
    return active;
  }

  public static void activate(TelemetryStore store) {
    active = store;
  }

  /** Clears the active store if it is {@code store} (a newer application may have replaced it). */
  public static void deactivate(TelemetryStore store) {
    if (active == store) active = null;
  }

  void setDrain(ListenerBusDrain drain) {
    this.drain = drain;
  }

  /** Appends one record rendered from {@code view}. */
  public <T> void record(RecordSchema<T> schema, T view) {
    String body = schema.renderFields(view);
    synchronized (this) {
      long seq = nextSeq++;
      String line = "{\"seq\":" + seq + ",\"type\":\"" + schema.type() + "\"," + body + "}";
      lines.addLast(line);
      if (lines.size() > capacity) lines.removeFirst();
      if (sink != null) sink.write(line);
    }
  }

  /**
   * Up to {@code max} records with {@code seq > afterSeq}, as gzip-compressed newline-separated
   * JSON. Compressed because py4j answers of more than about 8 KiB stall on TCP delayed
   * acknowledgement (40 ms on Linux), and telemetry lines compress about tenfold.
   */
  public byte[] fetch(long afterSeq, int max) throws IOException {
    StringBuilder text = new StringBuilder();
    synchronized (this) {
      long skip = Math.max(0, afterSeq - firstSeq() + 1);
      Iterator<String> it = lines.iterator();
      for (long i = 0; i < skip && it.hasNext(); i++) it.next();
      for (int n = 0; n < max && it.hasNext(); n++) {
        text.append(it.next()).append('\n');
      }
    }
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(text.length() / 8 + 64);
    try (GZIPOutputStream gzip = new GZIPOutputStream(bytes)) {
      gzip.write(text.toString().getBytes(StandardCharsets.UTF_8));
    }
    return bytes.toByteArray();
  }

  /** Sequence number of the oldest record still in memory (the next one if empty). */
  public synchronized long firstSeq() {
    return nextSeq - lines.size();
  }

  /** Sequence number of the newest record, 0 when there is none. */
  public synchronized long lastSeq() {
    return nextSeq - 1;
  }

  /** Adds a feature's record type; call before the file sink is attached (driver plugin init). */
  public void register(RecordSchema<?> schema) {
    schemas.add(schema);
  }

  /** JSON object mapping each record type to its field list, see {@link RecordSchema}. */
  public String schemas() {
    StringBuilder out = new StringBuilder("{");
    for (RecordSchema<?> s : schemas) {
      if (out.length() > 1) out.append(',');
      out.append('"').append(s.type()).append("\":").append(s.describe());
    }
    return out.append('}').toString();
  }

  /** Blocks until every listener event posted so far has been recorded. */
  public void awaitEvents(long timeoutMs) throws TimeoutException {
    drain.await(timeoutMs);
  }

  /** Starts writing to {@code sink}: first the schema line and every record still held, then each new one. */
  synchronized void attach(TelemetryFileSink sink) {
    sink.write("{\"seq\":0,\"type\":\"schema\",\"schemas\":" + schemas() + "}");
    for (String line : lines) sink.write(line);
    sink.flush();
    this.sink = sink;
  }

  synchronized void flush() {
    if (sink != null) sink.flush();
  }

  /** Flushes and closes the sink; later records stay in memory only. Safe to call twice. */
  synchronized void close() {
    if (sink != null) {
      sink.close();
      sink = null;
    }
  }
}
