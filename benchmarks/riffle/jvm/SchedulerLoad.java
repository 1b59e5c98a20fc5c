package dev.sparkrm.riffle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sparkrm.rpc.MessageRouter;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Drives Riffle's driver-side scheduler with simulated executors and a stream of map outputs, and
 * prints one JSON line: requests the driver handled per second, how busy its plugin endpoint was, and
 * the delay from the map output that completes a merge to the merge reaching its executor.
 *
 * <p>Everything on the driver's side is real (the scheduler, and in {@code push} mode the pusher); the
 * executors and the network are simulated in this JVM. Spark's plugin endpoint handles one request at a
 * time, so every executor request (registration, poll, merge report) runs on one "endpoint" thread here
 * too, its JSON reply included. In {@code poll} mode each executor asks every {@code pollMs} (the
 * scheduler before pushes, which the caller puts on the class path); executor-side work (parsing,
 * merging) runs on other threads. Map outputs arrive from a "listener" thread at a steady rate; the map
 * stage completes a second after the last, so merges issued for leftovers are told apart.
 *
 * <p>Arguments: mode executors executorsPerHost maps mapsPerSecond blockBytes partitions mergeMs pollMs.
 */
public final class SchedulerLoad {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final String mode;
  private final int executors;
  private final int perHost;
  private final long mergeMs;
  private final long pollMs;
  private final RiffleScheduler scheduler;
  private final ExecutorService endpoint = Executors.newSingleThreadExecutor();
  private final ExecutorService executorSide = Executors.newFixedThreadPool(4);
  private final ScheduledExecutorService merges = Executors.newScheduledThreadPool(2);
  private final Map<String, AtomicLong> requests = new ConcurrentHashMap<>();
  private final AtomicLong endpointBusyNanos = new AtomicLong();
  private final AtomicLong pushes = new AtomicLong();
  private final ConcurrentLinkedQueue<double[]> delivered = new ConcurrentLinkedQueue<>(); // [delayMs, leftover]
  private long[] outputAt; // nanoTime each map output reached the scheduler
  private volatile long completedAt = Long.MAX_VALUE;
  private volatile boolean running = true;

  private SchedulerLoad(String mode, int executors, int perHost, long mergeMs, long pollMs,
      RiffleScheduler scheduler) {
    this.mode = mode;
    this.executors = executors;
    this.perHost = perHost;
    this.mergeMs = mergeMs;
    this.pollMs = pollMs;
    this.scheduler = scheduler;
  }

  public static void main(String[] args) throws Exception {
    String mode = args[0];
    int executors = Integer.parseInt(args[1]);
    int perHost = Integer.parseInt(args[2]);
    int maps = Integer.parseInt(args[3]);
    double rate = Double.parseDouble(args[4]);
    long blockBytes = Long.parseLong(args[5]);
    int partitions = Integer.parseInt(args[6]);
    ShuffleSettings settings = new ShuffleSettings(true, new MergePolicy.BlockSize(2L << 20, 100), 1.0, 60_000,
        100.0, true, true);
    RiffleScheduler scheduler = new RiffleScheduler(settings, 120_000, RiffleEvents.NONE);
    SchedulerLoad load = new SchedulerLoad(mode, executors, perHost, Long.parseLong(args[7]), Long.parseLong(args[8]),
        scheduler);
    System.out.println(MessageRouter.toJson(load.run(maps, rate, blockBytes, partitions)));
    System.exit(0);
  }

  private Map<String, Object> run(int maps, double rate, long blockBytes, int partitions) throws Exception {
    List<Thread> pollers = mode.equals("push") ? registerInboxes() : startPollers();
    scheduler.registerShuffle(0, partitions, null);
    scheduler.mapStageSubmitted(0, maps, null, System.currentTimeMillis());
    outputAt = new long[maps];
    Map<String, Long> before = counts();
    long busyBefore = endpointBusyNanos.get();
    long pushesBefore = pushes.get();
    long start = System.nanoTime();
    for (int i = 0; i < maps; i++) {
      long due = start + (long) (i * 1e9 / rate);
      for (long wait = due - System.nanoTime(); wait > 0; wait = due - System.nanoTime()) LockSupport.parkNanos(wait);
      int e = i % executors;
      outputAt[i] = System.nanoTime();
      scheduler.mapOutput(0, i, i, Integer.toString(e), host(e), blockBytes * partitions, System.currentTimeMillis());
    }
    Thread.sleep(1000);
    long mapPhaseNanos = System.nanoTime() - start;
    Map<String, Long> during = diff(counts(), before);
    long busy = endpointBusyNanos.get() - busyBefore;
    long pushed = pushes.get() - pushesBefore;
    completedAt = System.nanoTime();
    scheduler.mapStageCompleted(0, true, System.currentTimeMillis());
    long sealDeadline = System.currentTimeMillis() + 60_000;
    while (!((Boolean) scheduler.plan(0, System.currentTimeMillis()).get("sealed"))) {
      if (System.currentTimeMillis() > sealDeadline) throw new IllegalStateException("the shuffle never sealed");
      Thread.sleep(10);
    }
    running = false;
    for (Thread t : pollers) t.join();

    List<Double> delays = new ArrayList<>();
    int leftovers = 0;
    for (double[] d : delivered) {
      if (d[1] > 0) leftovers++;
      else delays.add(d[0]);
    }
    double seconds = mapPhaseNanos / 1e9;
    long asked = during.values().stream().mapToLong(Long::longValue).sum();
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("mode", mode);
    out.put("executors", executors);
    out.put("executors_per_host", perHost);
    out.put("maps", maps);
    out.put("map_phase_s", seconds);
    out.put("requests", during);
    out.put("pushes", pushed);
    out.put("rpc_per_s", (asked + pushed) / seconds);
    out.put("endpoint_busy", busy / (double) mapPhaseNanos);
    out.put("merges", delivered.size());
    out.put("leftover_merges", leftovers);
    out.put("delay_ms", percentiles(delays));
    return out;
  }

  private List<Thread> registerInboxes() throws Exception {
    AssignmentPusher pusher = new AssignmentPusher(scheduler, System::currentTimeMillis);
    for (int e = 0; e < executors; e++) {
      String id = Integer.toString(e);
      List<String> dirs = List.of("/local/" + id);
      ask("register", () -> {
        pusher.register(id, dirs, json -> {
          pushes.incrementAndGet();
          executorSide.execute(() -> onMessage(id, json));
        });
        return null;
      });
    }
    return List.of();
  }

  /** The scheduler before pushes: each executor polls, sending its directories with its first poll. */
  private List<Thread> startPollers() throws Exception {
    Method poll = RiffleScheduler.class.getMethod("poll", String.class, List.class, long.class);
    List<Thread> threads = new ArrayList<>();
    CountDownLatch polledOnce = new CountDownLatch(executors);
    for (int e = 0; e < executors; e++) {
      String id = Integer.toString(e);
      Thread t = new Thread(() -> {
        List<String> dirs = List.of("/local/" + id);
        try {
          while (running) {
            List<String> sent = dirs;
            String reply = ask("poll", () -> MessageRouter.toJson(poll.invoke(scheduler, id, sent,
                System.currentTimeMillis())));
            if (dirs != null) polledOnce.countDown();
            dirs = null;
            onMessage(id, reply);
            Thread.sleep(pollMs);
          }
        } catch (Exception ex) {
          throw new IllegalStateException(ex);
        }
      });
      t.setDaemon(true);
      t.start();
      threads.add(t);
    }
    polledOnce.await(); // every executor's directories are known, as pushes register them first
    return threads;
  }

  /** An executor handles what the driver told it: each merge "runs" for mergeMs, then is reported. */
  private void onMessage(String executorId, String json) {
    long now = System.nanoTime();
    JsonNode message;
    try {
      message = JSON.readTree(json);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
    for (JsonNode m : message.path("merges")) {
      long ready = 0;
      for (JsonNode in : m.path("inputs")) ready = Math.max(ready, outputAt[in.get(0).asInt()]);
      boolean leftover = now > completedAt && ready < completedAt;
      long since = leftover ? completedAt : ready; // a leftover merge waits for the stage's end by design
      delivered.add(new double[] {(now - since) / 1e6, leftover ? 1 : 0});
      long groupId = m.path("groupId").asLong();
      merges.schedule(() -> {
        return ask("done", () -> scheduler.mergeEnded(groupId, "committed", null, MessageRouter.parse("{}"),
            System.currentTimeMillis()));
      }, mergeMs, TimeUnit.MILLISECONDS);
    }
  }

  /** A request to the driver's plugin endpoint: handled there one at a time, the caller waiting. */
  private <T> T ask(String kind, Callable<T> handler) throws Exception {
    requests.computeIfAbsent(kind, k -> new AtomicLong()).incrementAndGet();
    return endpoint.submit(() -> {
      long t0 = System.nanoTime();
      try {
        return handler.call();
      } finally {
        endpointBusyNanos.addAndGet(System.nanoTime() - t0);
      }
    }).get();
  }

  private String host(int executor) {
    return "host-" + executor / perHost;
  }

  private Map<String, Long> counts() {
    Map<String, Long> out = new LinkedHashMap<>();
    requests.forEach((k, v) -> out.put(k, v.get()));
    return out;
  }

  private static Map<String, Long> diff(Map<String, Long> after, Map<String, Long> before) {
    Map<String, Long> out = new LinkedHashMap<>();
    after.forEach((k, v) -> out.put(k, v - before.getOrDefault(k, 0L)));
    return out;
  }

  private static Map<String, Double> percentiles(List<Double> values) {
    double[] v = values.stream().mapToDouble(Double::doubleValue).toArray();
    Arrays.sort(v);
    Map<String, Double> out = new LinkedHashMap<>();
    if (v.length == 0) return out;
    for (int p : new int[] {50, 95, 99}) out.put("p" + p, v[(int) Math.min(v.length - 1, p / 100.0 * v.length)]);
    out.put("max", v[v.length - 1]);
    return out;
  }
}
