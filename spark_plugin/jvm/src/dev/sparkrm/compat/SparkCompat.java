package dev.sparkrm.compat;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.scheduler.SparkListenerInterface;

/**
 * Every use of Spark API that is internal or changed between releases, in one place.
 *
 * <p>The jar is compiled against the installed pyspark's jars; {@code build.properties} in the jar
 * records which Spark version that was, and {@link #checkRuntimeVersion} refuses to start on a
 * different major.minor line, where internal signatures differ (e.g. 3.5 needs the jar on
 * {@code extraClassPath} for a shuffle manager; 4.3 moved {@code shuffleBlockResolver()} to
 * {@code BlockingShuffleManager}).
 */
public final class SparkCompat {
  private static final String BUILD_INFO = "/dev/sparkrm/build.properties";

  private SparkCompat() {}

  /** The Spark version this JVM runs. */
  public static String runtimeSparkVersion() {
    return org.apache.spark.package$.MODULE$.SPARK_VERSION();
  }

  /** The Spark version the jar was compiled against (from {@code build.properties}). */
  public static String builtForSparkVersion() {
    return buildInfo().getProperty("spark.version");
  }

  /**
   * Fails with a clear message when the running Spark is another major.minor line than the jar's.
   *
   * @throws IllegalStateException naming both versions and the rebuild command
   */
  public static void checkRuntimeVersion() {
    String built = builtForSparkVersion();
    String running = runtimeSparkVersion();
    if (!majorMinor(built).equals(majorMinor(running))) {
      throw new IllegalStateException("The sparkrm jar was compiled against Spark " + built
          + " but this application runs Spark " + running + ". Rebuild it against this Spark with "
          + "`python -m spark_plugin jar --rebuild` where pyspark==" + running + " is installed.");
    }
  }

  /** Java/py4j-facing copy of the build information (spark.version, source.hash, package.version). */
  public static Properties buildInfo() {
    Properties p = new Properties();
    try (InputStream in = SparkCompat.class.getResourceAsStream(BUILD_INFO)) {
      if (in == null) throw new IllegalStateException("The sparkrm jar lacks " + BUILD_INFO + "; rebuild it");
      p.load(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return p;
  }

  /**
   * Adds {@code listener} on its own listener-bus queue, so that it neither slows nor is slowed by
   * other listeners. Its capacity is Spark's {@code spark.scheduler.listenerbus.eventqueue.<queue>.capacity}.
   * {@code LiveListenerBus.addToQueue} is private[spark] in Scala and public in bytecode (4.0-4.2).
   */
  public static void addListener(SparkContext sc, SparkListenerInterface listener, String queue) {
    sc.listenerBus().addToQueue(listener, queue);
  }

  /** Posts {@code event} to every listener queue ({@code LiveListenerBus.post}, private[spark] in Scala). */
  public static void postEvent(SparkContext sc, SparkListenerEvent event) {
    sc.listenerBus().post(event);
  }

  private static String majorMinor(String version) {
    String[] parts = version.split("[.-]");
    return parts.length >= 2 ? parts[0] + "." + parts[1] : version;
  }
}
