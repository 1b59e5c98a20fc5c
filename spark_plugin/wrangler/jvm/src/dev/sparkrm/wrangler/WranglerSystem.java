package dev.sparkrm.wrangler;

import dev.sparkrm.SparkrmSystem;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.PluginContext;

/** Wrangler inside the sparkrm plugin: holds and decisions on the driver, a node sampler in every executor. */
public final class WranglerSystem implements SparkrmSystem {
  private WranglerDriver driver;
  private boolean sampling;

  @Override
  public String enabledKey() {
    return "spark.wrangler.enabled";
  }

  @Override
  public Map<String, String> startDriver(DriverContext c) {
    driver = WranglerDriver.start(c.sc(), c.conf(), c.router(), c.telemetry());
    return Map.of(NodeSampler.INTERVAL_CONF, Long.toString(driver.intervalMs()));
  }

  @Override
  public void bind(SparkContext sc) {
    if (driver != null) driver.bind(sc);
  }

  @Override
  public void startExecutor(PluginContext ctx, Map<String, String> extraConf) {
    String samplingMs = extraConf.get(NodeSampler.INTERVAL_CONF);
    if (samplingMs == null) return;
    NodeSampler.start(ctx, Long.parseLong(samplingMs));
    sampling = true;
  }

  @Override
  public void stop() {
    if (driver != null) {
      driver.stop();
      driver = null;
    }
    if (sampling) {
      NodeSampler.stopSampler();
      sampling = false;
    }
  }
}
