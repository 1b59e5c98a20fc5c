package dev.sparkrm.riffle;

import java.util.ArrayDeque;

/**
 * The merger's memory budget for read and write buffers (thesis §3.5): a merge starts only when
 * its buffers fit, otherwise it queues; waiting merges are admitted first come, first served.
 */
final class MergeBudget {
  private final long capacity;
  private final ArrayDeque<Object> queue = new ArrayDeque<>();
  private long used;
  private long peak;

  MergeBudget(long capacity) {
    this.capacity = capacity;
  }

  long capacity() {
    return capacity;
  }

  /**
   * Blocks until {@code bytes} (at most the capacity) are free for this caller, in FIFO order; returns
   * whether it had to wait (others held the memory, or were queued ahead).
   */
  synchronized boolean acquire(long bytes) throws InterruptedException {
    Object ticket = new Object();
    queue.addLast(ticket);
    boolean waited = false;
    try {
      while (queue.peekFirst() != ticket || used + bytes > capacity) {
        waited = true;
        wait();
      }
    } finally {
      queue.remove(ticket);
      notifyAll();
    }
    used += bytes;
    peak = Math.max(peak, used);
    return waited;
  }

  synchronized void release(long bytes) {
    used -= bytes;
    notifyAll();
  }

  /** The most buffer memory ever held at once. */
  synchronized long peak() {
    return peak;
  }
}
