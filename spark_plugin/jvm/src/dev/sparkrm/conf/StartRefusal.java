package dev.sparkrm.conf;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Ends an application whose sparkrm configuration is wrong, with the banner and one line per problem
 * and no stack trace.
 *
 * <p>Throwing from the driver plugin's {@code init} is not enough under {@code spark-submit}: the
 * SparkContext constructor then stops itself (which logs a NullPointerException with twenty frames in
 * Spark 4.1, its heartbeater not yet existing), and the application prints its own trace of the failure
 * (a Py4J traceback for Python, an uncaught exception for a JVM application). So when this JVM belongs
 * to one application started by {@code spark-submit} in client mode, it prints the banner and exits with
 * status {@value #EXIT_STATUS}; the trace goes to DEBUG. Where the JVM serves something that outlives a
 * failed start (pyspark's gateway for {@code python app.py} and notebooks, SparkR's backend, the Scala
 * shell) or reports the failure itself (YARN's application master, a standalone cluster's driver
 * wrapper), the exception is thrown after the banner, as before.
 */
public final class StartRefusal {
  private static final Logger LOG = LoggerFactory.getLogger(StartRefusal.class);
  /** Exit status of a refused application, as {@code sparkrm submit} exits for a configuration error. */
  public static final int EXIT_STATUS = 2;
  /** A main thread running this class was started by spark-submit. */
  static final String SPARK_SUBMIT = "org.apache.spark.deploy.SparkSubmit";
  /** Main-thread classes of JVMs that outlive a failed start: pyspark's gateway, SparkR's backend, the Scala shell. */
  static final List<String> SHARED = List.of("org.apache.spark.api.python.PythonGatewayServer",
      "org.apache.spark.api.r.RBackend", "org.apache.spark.repl.");

  private StartRefusal() {}

  /** The text printed on standard error for {@code e}: a banner line, then one line per problem. */
  public static String banner(SparkrmConfigException e) {
    return "\nsparkrm: this application cannot start. Fix its configuration:\n" + e.getMessage() + "\n";
  }

  /**
   * Prints the banner and ends the application: exits the JVM when the application owns it (see the
   * class comment), else returns {@code e} for the caller to throw.
   */
  public static SparkrmConfigException refuse(SparkrmConfigException e) {
    System.err.println(banner(e));
    System.err.flush();
    LOG.debug("sparkrm refused the configuration", e);
    if (applicationOwnsJvm(mainThreadClasses())) {
      LOG.debug("This JVM runs one spark-submit application: exiting with status {}", EXIT_STATUS);
      System.exit(EXIT_STATUS);
    }
    return e;
  }

  /**
   * Whether a JVM whose main thread runs these classes (innermost first) belongs to one application
   * started by spark-submit in client mode, and so may end with it.
   */
  public static boolean applicationOwnsJvm(List<String> mainThreadClasses) {
    boolean submitted = false;
    for (String name : mainThreadClasses) {
      if (name.equals(SPARK_SUBMIT) || name.startsWith(SPARK_SUBMIT + "$")) submitted = true;
      for (String shared : SHARED) {
        if (name.startsWith(shared)) return false;
      }
    }
    return submitted;
  }

  /** Classes on the stack of the thread named {@code main}, innermost first (empty when there is none). */
  public static List<String> mainThreadClasses() {
    List<String> names = new ArrayList<>();
    for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
      if (!e.getKey().getName().equals("main")) continue;
      for (StackTraceElement frame : e.getValue()) names.add(frame.getClassName());
    }
    return names;
  }
}
