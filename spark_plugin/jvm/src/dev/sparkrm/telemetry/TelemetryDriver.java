package dev.sparkrm.telemetry;

import dev.sparkrm.compat.SparkCompat;
import dev.sparkrm.conf.SparkrmConf;
import dev.sparkrm.conf.SparkrmConfigException;
import dev.sparkrm.rpc.MessageRouter;
import dev.sparkrm.telemetry.Records.ExecutorView;
import java.io.File;
import java.util.concurrent.TimeoutException;
import org.apache.spark.SparkContext;

/** Starts, binds and stops telemetry in the driver: the store, its listener and its file sink. */
public final class TelemetryDriver {
  /** Listener-bus queue of the telemetry listener. */
  public static final String QUEUE = "sparkrm";

  private final TelemetryStore store;
  private final File dir;

  private TelemetryDriver(TelemetryStore store, File dir) {
    this.store = store;
    this.dir = dir;
  }

  /**
   * Creates the store, registers the listener and the executor-registration handler, and makes the
   * store reachable from Python ({@link TelemetryStore#active()}).
   *
   * @throws SparkrmConfigException if the telemetry directory cannot be created or written
   */
  public static TelemetryDriver start(SparkContext sc, SparkrmConf conf, MessageRouter router) {
    File dir = checkedDir(conf.getString("spark.sparkrm.telemetry.dir"));
    TelemetryStore store = new TelemetryStore((int) conf.getLong("spark.sparkrm.telemetry.bufferRecords"));
    store.setDrain(timeoutMs -> awaitListener(sc, timeoutMs));
    SparkCompat.addListener(sc, new TelemetryListener(store), QUEUE);
    router.on("register", msg -> {
      store.record(Records.EXECUTOR, new ExecutorView("registered", msg.path("executorId").asText(),
          null, 0, msg.path("time").asLong(), null, msg.path("pid").asLong()));
      return "ok";
    });
    TelemetryStore.activate(store);
    return new TelemetryDriver(store, dir);
  }

  /** The store features add their record types to. */
  public TelemetryStore store() {
    return store;
  }

  /** Opens the file sink once the application id is known. */
  public void bind(String appId) {
    if (dir != null) store.attach(new TelemetryFileSink(dir, appId));
  }

  /**
   * Flushes and closes the file and detaches the store from new readers; Python objects that
   * already hold it can still read it.
   */
  public void stop() {
    store.close();
    TelemetryStore.deactivate(store);
  }

  /** Waits until the telemetry listener has handled every event posted so far (see {@link DrainMarker}). */
  private static void awaitListener(SparkContext sc, long timeoutMs) throws TimeoutException {
    if (sc.isStopped()) return; // nothing more will be delivered
    DrainMarker marker = new DrainMarker();
    SparkCompat.postEvent(sc, marker);
    try {
      if (!marker.await(timeoutMs)) {
        throw new TimeoutException("Telemetry listener did not catch up within " + timeoutMs + " ms");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new TimeoutException("Interrupted while waiting for the telemetry listener");
    }
  }

  private static File checkedDir(String path) {
    if (path == null) return null;
    File dir = new File(path);
    if (!(dir.isDirectory() || dir.mkdirs()) || !dir.canWrite()) {
      throw new SparkrmConfigException("spark.sparkrm.telemetry.dir must be a writable local directory on the "
          + "driver. Got '" + path + "', which cannot be created or written. Point it at a writable "
          + "directory, or remove it to keep telemetry in memory only.");
    }
    return dir;
  }
}
