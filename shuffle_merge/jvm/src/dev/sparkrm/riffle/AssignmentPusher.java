package dev.sparkrm.riffle;

import dev.sparkrm.rpc.MessageRouter;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Pushes the scheduler's news to executors the moment it has any, instead of executors polling the
 * driver for it (500 executors polling every 10 ms would be 50,000 requests a second at the driver).
 *
 * <p>One daemon thread drains the {@link RiffleScheduler} whenever it signals work (coalesced: a burst
 * of map outputs costs one drain) and at its next deadline (a merge timeout or a seal deadline), and
 * sends each executor its message through the inbox it registered. Sending never blocks: Spark's RPC
 * queues one-way messages.
 */
final class AssignmentPusher {
  private static final Logger LOG = LoggerFactory.getLogger(AssignmentPusher.class);

  private final RiffleScheduler scheduler;
  private final LongSupplier clock;
  private final Map<String, Consumer<String>> inboxes = new ConcurrentHashMap<>();
  private final ScheduledExecutorService thread = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "riffle-pusher");
    t.setDaemon(true);
    return t;
  });
  private final AtomicBoolean drainQueued = new AtomicBoolean();
  private ScheduledFuture<?> deadline; // touched only by the pusher thread

  AssignmentPusher(RiffleScheduler scheduler, LongSupplier clock) {
    this.scheduler = scheduler;
    this.clock = clock;
    scheduler.onWork(this::wake);
  }

  /** Executor {@code executorId} takes its messages (JSON text) through {@code inbox}. */
  void register(String executorId, List<String> localDirs, Consumer<String> inbox) {
    inboxes.put(executorId, inbox);
    scheduler.register(executorId, localDirs);
  }

  /** The scheduler has news: drain it soon (once, however many times this is called meanwhile). */
  void wake() {
    if (drainQueued.compareAndSet(false, true)) {
      try {
        thread.execute(this::push);
      } catch (RejectedExecutionException e) { // stopped: nothing more to send
        drainQueued.set(false);
      }
    }
  }

  void stop() {
    thread.shutdownNow();
  }

  private void push() {
    drainQueued.set(false);
    try {
      long now = clock.getAsLong();
      scheduler.drain(now).forEach((executorId, message) -> send(executorId, message));
      long next = scheduler.nextDeadline();
      if (deadline != null) deadline.cancel(false);
      deadline = next == Long.MAX_VALUE ? null
          : thread.schedule(this::push, Math.max(1, next - now), TimeUnit.MILLISECONDS);
    } catch (RuntimeException e) { // the next signal or deadline drains again
      LOG.warn("Riffle could not push merge work to executors: {}", e.toString());
    }
  }

  private void send(String executorId, Map<String, Object> message) {
    Consumer<String> inbox = inboxes.get(executorId);
    if (inbox == null) return; // a merge's inputs outlived their executor: it times out
    try {
      inbox.accept(MessageRouter.toJson(message));
    } catch (RuntimeException e) { // a lost executor: its merges time out
      LOG.debug("Riffle could not push to executor {}: {}", executorId, e.toString());
    }
  }
}
