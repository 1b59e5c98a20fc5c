package dev.sparkrm.riffle;

import dev.sparkrm.conf.SparkrmConf;
import dev.sparkrm.conf.SparkrmConfigException;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

/**
 * How one shuffle is merged: the application's {@code spark.riffle.*} settings, overridden per job
 * (thesis: policies can be set per job) by the job's local properties:
 *
 * <ul>
 *   <li>{@code sparkrm.job.riffle.<name>}, e.g. {@code sc.setLocalProperty("sparkrm.job.riffle.merge.fanIn",
 *       "20")} or {@code shuffle_merge.job_settings(spark, fan_in=20)}: any job;
 *   <li>{@code spark.riffle.<name>} itself: Spark SQL copies the session configuration into the local
 *       properties of every query it runs, so {@code spark.conf.set("spark.riffle.merge.fanIn", "20")}
 *       applies to DataFrame jobs (and overwrites a local property of that name, hence the prefix above).
 * </ul>
 *
 * @param enabled           whether this shuffle is merged at all
 * @param bestEffort        fraction of outputs merged after which reducers stop waiting
 * @param bestEffortTimeoutMs longest wait after the map stage
 * @param maxWaitRatio      longest wait as a multiple of the map stage's duration
 * @param leftovers         merge an executor's (or host's) remaining outputs at the end of the map stage
 * @param perHost           merge the outputs of all executors on a host together ({@code merge.scope=host})
 */
public record ShuffleSettings(boolean enabled, MergePolicy policy, double bestEffort, long bestEffortTimeoutMs,
    double maxWaitRatio, boolean leftovers, boolean perHost) {

  static ShuffleSettings from(SparkrmConf conf) {
    return new ShuffleSettings(conf.getBoolean("spark.riffle.enabled"), MergePolicy.fromConf(conf),
        conf.getDouble("spark.riffle.bestEffort.fraction"), conf.getLong("spark.riffle.bestEffort.timeout"),
        conf.getDouble("spark.riffle.bestEffort.maxWaitRatio"), conf.getBoolean("spark.riffle.merge.leftovers"),
        "host".equals(conf.getString("spark.riffle.merge.scope")));
  }

  /**
   * The settings for a job with local {@code properties}, given the application's configuration.
   *
   * @throws SparkrmConfigException naming the bad property, value and accepted range
   */
  static ShuffleSettings forJob(Map<String, String> appConf, Properties properties) {
    Map<String, String> merged = new HashMap<>(appConf);
    boolean overridden = false;
    if (properties != null) {
      for (String key : SparkrmConf.perJobKeys()) {
        if (!key.startsWith("spark.riffle.")) continue;
        String value = properties.getProperty(SparkrmConf.jobPrefix() + key.substring("spark.".length()));
        if (value == null) value = properties.getProperty(key);
        if (value != null && !value.equals(appConf.get(key))) {
          merged.put(key, value);
          overridden = true;
        }
      }
    }
    return overridden ? from(SparkrmConf.validateValues(merged)) : null;
  }

  /** Latest time reducers wait for merges: the absolute timeout or the share of the map stage, whichever is sooner. */
  long sealDeadline(long stageSubmittedAt, long stageDoneAt) {
    long byRatio = (long) (maxWaitRatio * Math.max(0, stageDoneAt - stageSubmittedAt));
    return stageDoneAt + Math.min(bestEffortTimeoutMs, byRatio);
  }
}
