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
 * local property {@value #JOB_PROPERTY} and queues {@code (value, epoch ms, cores)} per job; Python
 * drains the queue. Lines of fits outside SLAQ (no property) are dropped.
 *
 * <p>The same lines mark iteration boundaries, so they are where SLAQ acts on a running fit without
 * killing tasks, on the fitting thread itself, after logging and before the next iteration: while
 * Python has a job {@linkplain #hold held} the thread waits here; once released, it takes the
 * scheduler pool and job group Python last {@linkplain #route routed} the job to, so the fit's next
 * Spark jobs (MLlib's own shuffles included) run in the pool of its new grant. Each objective is
 * queued with the cores its iteration ran on.
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

  /** Where a job's next iterations run: FAIR pool (null: leave the pool), job group and its description, cores. */
  private record Route(String pool, String group, String description, int cores) {}

  private static volatile ObjectiveFeed installed;

  private final Map<String, Queue<double[]>> byJob = new ConcurrentHashMap<>();
  private final Set<String> held = ConcurrentHashMap.newKeySet();
  private final Map<String, Route> pending = new ConcurrentHashMap<>();
  private final Map<String, Integer> coresOf = new ConcurrentHashMap<>();

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
                .add(new double[] {value, event.getTimeMillis(), coresOf.getOrDefault(job, 0)});
          } catch (NumberFormatException ignored) {
            // not an objective after all: nothing to report
          }
          awaitRelease(job);
          applyRoute(job);
        }
        return;
      }
    }
  }

  /**
   * Objectives logged for {@code job} since the last call, flattened as value, epoch ms, cores the
   * iteration ran on, value, ...
   */
  public double[] drain(String job) {
    Queue<double[]> queue = byJob.get(job);
    List<double[]> taken = new ArrayList<>();
    for (double[] point; queue != null && (point = queue.poll()) != null; ) {
      taken.add(point);
    }
    double[] flat = new double[3 * taken.size()];
    for (int i = 0; i < taken.size(); i++) {
      System.arraycopy(taken.get(i), 0, flat, 3 * i, 3);
    }
    return flat;
  }

  /** {@code job}'s fit starts on {@code cores}, in the pool and group its thread already has. */
  public void begin(String job, int cores) {
    coresOf.put(job, cores);
  }

  /**
   * Run {@code job}'s iterations after its next boundary in FAIR pool {@code pool} (null: keep the
   * pool) and job group {@code group}, on {@code cores}; a later route before that boundary wins.
   */
  public void route(String job, String pool, String group, String description, int cores) {
    pending.put(job, new Route(pool, group, description, cores));
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

  /** Forget a finished job: release it and drop its queue and routes. */
  public void close(String job) {
    hold(job, false);
    byJob.remove(job);
    pending.remove(job);
    coresOf.remove(job);
  }

  /** On the fitting thread: take the job's pending route, if any, for the Spark jobs that follow. */
  private void applyRoute(String job) {
    Route route = pending.remove(job);
    SparkContext sc = SparkCompat.activeContext();
    if (route == null || sc == null) {
      return;
    }
    if (route.pool() != null) {
      sc.setLocalProperty("spark.scheduler.pool", route.pool());
    }
    sc.setLocalProperty("spark.jobGroup.id", route.group());
    sc.setLocalProperty("spark.job.description", route.description());
    coresOf.put(job, route.cores());
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
