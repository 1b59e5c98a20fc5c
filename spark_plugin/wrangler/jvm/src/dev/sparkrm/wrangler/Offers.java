package dev.sparkrm.wrangler;

import dev.sparkrm.compat.SparkCompat;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.cluster.CoarseGrainedSchedulerBackend;

/**
 * What {@link ExecutorHolds} and {@link HoldSafety} need of Spark's scheduler: the set that keeps offers from
 * an executor, which executors are active, and the barrier and decommission state a hold must give way to.
 * {@link #of} is Spark's; the tests drive the holds through a plain implementation with a clock of their own.
 */
interface Offers {
  /** The monitor every hold change is made under (Spark's backend: its own, as Spark's offer rounds take it). */
  Object lock();

  /** Keeps offers from {@code executorId} ({@code true}) or gives them back; under {@link #lock}. */
  void withhold(String executorId, boolean withheld);

  boolean isActive(String executorId);

  List<String> executorIds();

  void reviveOffers();

  /** Whether a barrier job waits for a retry because its stage found too few slots. */
  boolean barrierWaiting();

  /** Whether a decommission of {@code executorId} asked while it was inactive is parked. */
  boolean parkedDecommission(String executorId);

  /** Re-issues a parked decommission; holding no lock. Whether there was one. */
  boolean reissueParkedDecommission(String executorId);

  /** Decommissions {@code executorId} from the driver; holding no lock. */
  boolean decommission(String executorId, String why);

  /** Whether Spark decommissions {@code executorId} now; under {@link #lock}. */
  boolean decommissioning(String executorId);

  /** Spark's coarse-grained backend, through {@link SparkCompat}. */
  static Offers of(SparkContext sc, CoarseGrainedSchedulerBackend be) {
    return new Offers() {
      @Override
      public Object lock() {
        return be;
      }

      @Override
      public void withhold(String executorId, boolean withheld) {
        if (withheld) SparkCompat.pendingLossReasons(be).add(executorId);
        else SparkCompat.pendingLossReasons(be).remove(executorId);
      }

      @Override
      public boolean isActive(String executorId) {
        return be.isExecutorActive(executorId);
      }

      @Override
      public List<String> executorIds() {
        List<String> ids = new ArrayList<>();
        scala.collection.Iterator<String> it = be.getExecutorIds().iterator();
        while (it.hasNext()) ids.add(it.next());
        return ids;
      }

      @Override
      public void reviveOffers() {
        be.reviveOffers();
      }

      @Override
      public boolean barrierWaiting() {
        return SparkCompat.barrierJobsWaitingForSlots(sc);
      }

      @Override
      public boolean parkedDecommission(String executorId) {
        return SparkCompat.parkedDecommission(be, executorId);
      }

      @Override
      public boolean reissueParkedDecommission(String executorId) {
        return SparkCompat.reissueParkedDecommission(be, executorId);
      }

      @Override
      public boolean decommission(String executorId, String why) {
        return SparkCompat.decommission(be, executorId, why);
      }

      @Override
      public boolean decommissioning(String executorId) {
        return SparkCompat.decommissioning(be, executorId);
      }
    };
  }
}
