package dev.sparkrm;

import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * sparkrm's single entry point: {@code --conf spark.plugins=dev.sparkrm.SparkrmPlugin}.
 *
 * <p>The driver part validates the configuration and starts the enabled features; the executor part
 * registers each executor with the driver over the plugin RPC. With every feature off it records
 * nothing and changes nothing.
 */
public final class SparkrmPlugin implements SparkPlugin {
  @Override
  public DriverPlugin driverPlugin() {
    return new SparkrmDriverPlugin();
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new SparkrmExecutorPlugin();
  }
}
