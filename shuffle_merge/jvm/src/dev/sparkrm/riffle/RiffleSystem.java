package dev.sparkrm.riffle;

import dev.sparkrm.SparkrmSystem;
import dev.sparkrm.conf.SparkrmConf;
import java.util.Map;
import org.apache.spark.api.plugin.PluginContext;

/** Riffle inside the sparkrm plugin: the merge scheduler on the driver, a merger in every executor. */
public final class RiffleSystem implements SparkrmSystem {
  /** Extra-conf key that starts the merger in executors. */
  static final String START = "sparkrm.riffle";

  private RiffleDriver driver;
  private boolean executor;

  @Override
  public String enabledKey() {
    return "spark.riffle.enabled";
  }

  @Override
  public Map<String, String> startDriver(DriverContext c) {
    driver = RiffleDriver.start(c.sc(), c.conf(), c.router(), c.telemetry());
    return Map.of(START, "true");
  }

  @Override
  public void startExecutor(PluginContext ctx, Map<String, String> extraConf) {
    if (!"true".equals(extraConf.get(START))) return;
    RiffleExecutor.start(ctx, SparkrmConf.validate(ctx.conf()));
    executor = true;
  }

  @Override
  public void stop() {
    if (driver != null) {
      driver.stop();
      driver = null;
    }
    if (executor) {
      RiffleExecutor.stopAgent();
      executor = false;
    }
  }
}
