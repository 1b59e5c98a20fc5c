package dev.sparkrm.slaq;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.config.Property;
import dev.sparkrm.compat.SparkCompat;
import org.apache.spark.SparkContext;

/**
 * The objective of every iteration of a pyspark.ml estimator, as it trains, for SLAQ's predictor.
 *
 * <p>MLlib reports no progress to its caller until {@code fit} returns, but it logs each
 * iteration's objective on the thread that runs {@code fit}: breeze's L-BFGS and OWL-QN
 * ({@code "Val and Grad Norm: v (rel: r) g"}: LogisticRegression, LinearRegression, LinearSVC,
 * MultilayerPerceptronClassifier), ML's {@code Instrumentation} ({@code {"Cost@iter=k":"v"}} for
 * KMeans, {@code {"logLikelihood@iterk":v}} for GaussianMixture) and, at DEBUG,
 * GradientBoostedTrees ({@code "error of gbt = v"}). This appender listens to those loggers only
 * (their lines no longer reach the console), reads the SLAQ job from the logging thread's Spark
 * local property {@value #JOB_PROPERTY} and queues {@code (value, epoch ms)} per job; Python
 * drains the queue. Lines of fits outside SLAQ (no property) are dropped.
 *
 * <p>The same lines mark iteration boundaries, so they are where SLAQ can stop a fit without
 * killing tasks: while Python has a job {@linkplain #hold held} (its grant fell below the cores
 * its fit runs on), the fitting thread waits here, after logging, before its next iteration.
 */
public final class ObjectiveFeed extends AbstractAppender {
  /** Local property naming the SLAQ job of the thread that runs {@code fit}. */
  public static final String JOB_PROPERTY = "sparkrm.slaq.job";

  /** A logger, the level it must log at, and the pattern whose group 1 is the objective. */
  private record Source(String logger, Level level, Pattern objective) {}

  private static final List<Source> SOURCES = List.of(
      new Source("breeze.optimize", Level.INFO, Pattern.compile("Val and Grad Norm: (\\S+)")),
      new Source("org.apache.spark.ml.util.Instrumentation", Level.INFO,
          Pattern.compile("\"(?:Cost@iter=\\d+|logLikelihood@iter\\d+)\":\"?([^\",}]+)")),
      new Source("org.apache.spark.ml.tree.impl.GradientBoostedTrees", Level.DEBUG,
          Pattern.compile("error of gbt = (\\S+)")));

  private static volatile ObjectiveFeed installed;

  private final Map<String, Queue<double[]>> byJob = new ConcurrentHashMap<>();
  private final Set<String> held = ConcurrentHashMap.newKeySet();

  private ObjectiveFeed() {
    super("sparkrm-slaq-objectives", null, null, true, Property.EMPTY_ARRAY);
  }

  /** Attach the appender to the estimators' loggers once per JVM; later calls return the same feed. */
  public static synchronized ObjectiveFeed install() {
    if (installed == null) {
      ObjectiveFeed feed = new ObjectiveFeed();
      feed.start();
      LoggerContext context = (LoggerContext) LogManager.getContext(false);
      Configuration config = context.getConfiguration();
      for (Source source : SOURCES) {
        LoggerConfig logger = new LoggerConfig(source.logger(), source.level(), false);
        logger.addAppender(feed, source.level(), null);
        config.addLogger(source.logger(), logger);
      }
      context.updateLoggers();
      installed = feed;
    }
    return installed;
  }

  @Override
  public void append(LogEvent event) {
    String job = currentJob();
    if (job == null) {
      return;
    }
    String message = event.getMessage().getFormattedMessage();
    for (Source source : SOURCES) {
      if (event.getLoggerName().startsWith(source.logger())) {
        Matcher m = source.objective().matcher(message);
        if (m.find()) {
          try {
            double value = Double.parseDouble(m.group(1));
            byJob.computeIfAbsent(job, k -> new ConcurrentLinkedQueue<>())
                .add(new double[] {value, event.getTimeMillis()});
          } catch (NumberFormatException ignored) {
            // not an objective after all: nothing to report
          }
          awaitRelease(job);
        }
        return;
      }
    }
  }

  /** Objectives logged for {@code job} since the last call, flattened as value, epoch ms, value, ... */
  public double[] drain(String job) {
    Queue<double[]> queue = byJob.get(job);
    List<double[]> taken = new ArrayList<>();
    for (double[] point; queue != null && (point = queue.poll()) != null; ) {
      taken.add(point);
    }
    double[] flat = new double[2 * taken.size()];
    for (int i = 0; i < taken.size(); i++) {
      flat[2 * i] = taken.get(i)[0];
      flat[2 * i + 1] = taken.get(i)[1];
    }
    return flat;
  }

  /** Hold (true) or release (false) {@code job}'s fit at its next iteration boundary. */
  public void hold(String job, boolean hold) {
    synchronized (held) {
      if (hold) {
        held.add(job);
      } else {
        held.remove(job);
      }
      held.notifyAll();
    }
  }

  /** Forget a finished job: release it and drop its queue. */
  public void close(String job) {
    hold(job, false);
    byJob.remove(job);
  }

  private void awaitRelease(String job) {
    synchronized (held) {
      while (held.contains(job)) {
        try {
          held.wait();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  private static String currentJob() {
    SparkContext sc = SparkCompat.activeContext();
    return sc == null ? null : sc.getLocalProperty(JOB_PROPERTY);
  }
}
