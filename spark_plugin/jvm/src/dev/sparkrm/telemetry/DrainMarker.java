package dev.sparkrm.telemetry;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.spark.scheduler.SparkListenerEvent;

/**
 * An event posted to the listener bus to learn when the telemetry listener has seen everything
 * posted before it: a queue delivers events in order, so the marker's arrival proves it. Cheaper
 * and more precise than {@code LiveListenerBus.waitUntilEmpty}, which polls every queue in 10 ms
 * steps. Not written to the event log.
 */
final class DrainMarker implements SparkListenerEvent {
  private final CountDownLatch seen = new CountDownLatch(1);

  void arrived() {
    seen.countDown();
  }

  boolean await(long timeoutMs) throws InterruptedException {
    return seen.await(timeoutMs, TimeUnit.MILLISECONDS);
  }

  @Override
  public boolean logEvent() {
    return false;
  }
}
