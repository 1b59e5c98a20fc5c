package dev.sparkrm.scheduler;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkContext$;
import org.apache.spark.scheduler.Pool;
import org.apache.spark.scheduler.TaskSetManager;
import scala.Enumeration;
import scala.Option;
import scala.collection.mutable.ArrayBuffer;

/**
 * A FAIR scheduler pool whose jobs run at most {@code cap} tasks at once: the per-job core grant of
 * Rotary's arbiter, which Spark's pools cannot express ({@code minShare} is a floor, and a pool with
 * spare executors takes them all; a pool maximum was proposed and closed unmerged, SPARK-15176 and
 * SPARK-31107).
 *
 * <p>The scheduler asks the root pool for its task sets once per offer round and then lets each take
 * every free slot it is offered, so a cap on running tasks alone is not enough: a round that offers
 * several executors (when a stage is submitted) would start the whole stage. This pool therefore offers
 * a task set only if all of its tasks not yet started fit under the cap beside the tasks running (and the
 * task sets offered before it in the same round): whatever the round does, the pool stays within its cap.
 * A task set too wide to ever fit is offered alone once the pool runs nothing, so it cannot starve; the
 * callers keep every stage at most {@code cap} tasks wide, which never needs that. Speculative copies are
 * not counted ahead (the arbiter runs without speculation).
 *
 * <p>A pool that holds back waiting tasks asks for another offer round {@link #REOFFER_MS} later. Spark
 * counts a task's end in its pool only when the task's result has been handled, on another thread, after
 * the backend has already offered the freed slot; the cluster backends offer again every second anyway,
 * but local mode offers only on task events, so a declined round with nothing left running would never
 * be followed by another and the pool's jobs would wait forever (Rotary's arbiter on {@code local[2]}).
 *
 * <p>Called under the task scheduler's lock, like every pool method; {@code runningTasks} is kept by Spark
 * (each task set reports its launches and ends to its parent pool).
 */
public final class CappedPool extends Pool {
  /** How long after a declined offer round the pool asks for another. */
  static final long REOFFER_MS = 200;

  private static final ScheduledExecutorService REOFFERS = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread thread = new Thread(r, "sparkrm-capped-pool-reoffer");
    thread.setDaemon(true);
    return thread;
  });

  private final int cap;
  private final AtomicBoolean reofferPending = new AtomicBoolean();

  public CappedPool(String name, Enumeration.Value schedulingMode, int minShare, int weight, int cap) {
    super(name, schedulingMode, minShare, weight);
    if (cap < 1) {
      throw new IllegalArgumentException("a pool's task cap is at least 1, not " + cap);
    }
    this.cap = cap;
  }

  public int cap() {
    return cap;
  }

  @Override
  public boolean isSchedulable() {
    return runningTasks() < cap && super.isSchedulable();
  }

  @Override
  public ArrayBuffer<TaskSetManager> getSortedTaskSetQueue() {
    ArrayBuffer<TaskSetManager> offered = new ArrayBuffer<>();
    ArrayBuffer<TaskSetManager> queue = super.getSortedTaskSetQueue();
    int free = cap - runningTasks();
    for (int i = 0; i < queue.size() && free > 0; i++) {
      TaskSetManager taskSet = queue.apply(i);
      int waiting = Math.max(0, taskSet.numTasks() - taskSet.tasksSuccessful() - taskSet.runningTasks());
      if (waiting <= free) {
        offered.addOne(taskSet);
        free -= waiting;
      } else if (runningTasks() == 0 && offered.isEmpty()) {
        offered.addOne(taskSet);  // wider than the cap: alone, or it would never run
        break;
      }
    }
    if (offered.size() < queue.size()) {
      reofferLater();
    }
    return offered;
  }

  /** Ask the active context's backend for an offer round {@link #REOFFER_MS} from now (one pending at most). */
  private void reofferLater() {
    if (!reofferPending.compareAndSet(false, true)) {
      return;
    }
    REOFFERS.schedule(() -> {
      reofferPending.set(false);
      Option<SparkContext> active = SparkContext$.MODULE$.getActive();
      if (active.isDefined() && !active.get().isStopped()) {
        active.get().schedulerBackend().reviveOffers();
      }
    }, REOFFER_MS, TimeUnit.MILLISECONDS);
  }
}
