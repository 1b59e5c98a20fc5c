package dev.sparkrm.wrangler;

import java.io.IOException;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryUsage;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The node counters Wrangler's models read: one reading of the OS, the executor process, its cgroup
 * and its JVM, and the sample (rates and levels) between two readings.
 *
 * <p>The five categories of the thesis's Ganglia counters (spec 11.2): CPU ({@code /proc/stat},
 * {@code /proc/loadavg}, run queue), memory ({@code /proc/meminfo}), disk ({@code /proc/diskstats}, whole
 * disks only), network ({@code /proc/net/dev}, every interface including loopback, which carries the
 * shuffle traffic between executors on one host), and system/process level (the executor's own CPU and
 * thread states, JVM GC and heap), plus what the executor's own container suffers ({@link ContainerCounters}:
 * its cgroup's CPU use and throttling, memory against its limit, block I/O, pressure stalls). Cumulative counters become
 * rates per second over the sampling interval, as Ganglia reports them. A file that cannot be read
 * leaves its fields null; sampling never fails the executor.
 */
final class NodeCounters {
  /** Sample fields in the order records declare them; every one is a double (or null). */
  static final List<String> FIELDS = Collections.unmodifiableList(Arrays.asList(
      "cpuUserPct", "cpuSystemPct", "cpuIowaitPct", "cpuStealPct", "cpuIdlePct",
      "load1", "load5", "load15", "procsRunning", "procsBlocked",
      "memAvailableBytes", "memFreeBytes", "memBuffersBytes", "memCachedBytes", "memShmemBytes", "swapFreeBytes",
      "diskReadBytesPerS", "diskWriteBytesPerS", "diskReadsPerS", "diskWritesPerS", "diskBusyPct",
      "netRxBytesPerS", "netTxBytesPerS", "netRxPacketsPerS", "netTxPacketsPerS",
      "procCpuPct", "jvmThreads", "jvmThreadsRunnable", "jvmThreadsBlocked", "jvmThreadsWaiting",
      "cgroupCpuPct", "cgroupThrottledPct", "cgroupThrottledMsPerS", "cgroupMemUsedBytes", "cgroupMemUsedPct",
      "cgroupMemFailsPerS", "cgroupMajorFaultsPerS", "cgroupIoReadBytesPerS", "cgroupIoWriteBytesPerS", "cgroupIoOpsPerS",
      "psiCpuSomePct", "psiCpuFullPct", "psiIoSomePct", "psiIoFullPct", "psiMemorySomePct", "psiMemoryFullPct",
      "gcTimeMsPerS", "gcCountPerS", "heapUsedBytes", "heapCommittedBytes"));

  private static final long SECTOR_BYTES = 512;
  private final ContainerCounters container = new ContainerCounters();
  private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();

  /** One reading: cumulative counters (summed where a file has several rows) and levels. */
  static final class Reading {
    long wallMs;
    long monoNs;
    long[] cpu; // user nice system idle iowait irq softirq steal, in clock ticks
    double[] load;
    Long procsRunning;
    Long procsBlocked;
    Map<String, Long> mem;
    long[] disk; // reads, sectors read, writes, sectors written, ms doing I/O
    long[] net; // rx bytes, rx packets, tx bytes, tx packets
    long processCpuNs;
    int[] threadStates; // all, runnable, blocked, waiting (incl. timed)
    ContainerCounters.Reading container;
    long gcMs;
    long gcCount;
    MemoryUsage heap;
  }

  /** Reads every counter now. */
  Reading read() {
    Reading r = new Reading();
    r.wallMs = System.currentTimeMillis();
    r.monoNs = System.nanoTime();
    readProcStat(r);
    r.load = loadAverages();
    r.mem = memInfo();
    r.disk = diskStats();
    r.net = netDev();
    r.processCpuNs = processCpuNs();
    r.threadStates = threadStates();
    r.container = container.read();
    for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
      r.gcMs += Math.max(0, gc.getCollectionTime());
      r.gcCount += Math.max(0, gc.getCollectionCount());
    }
    r.heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage();
    return r;
  }

  /** The sample over {@code [prev, cur]}: one value (or null) per {@link #FIELDS} entry. */
  static Map<String, Object> sample(Reading prev, Reading cur) {
    double seconds = Math.max(1e-3, (cur.monoNs - prev.monoNs) / 1e9);
    Map<String, Object> s = new LinkedHashMap<>();
    Double[] cpu = cpuPercents(prev.cpu, cur.cpu);
    s.put("cpuUserPct", cpu[0]);
    s.put("cpuSystemPct", cpu[1]);
    s.put("cpuIowaitPct", cpu[2]);
    s.put("cpuStealPct", cpu[3]);
    s.put("cpuIdlePct", cpu[4]);
    s.put("load1", cur.load == null ? null : cur.load[0]);
    s.put("load5", cur.load == null ? null : cur.load[1]);
    s.put("load15", cur.load == null ? null : cur.load[2]);
    s.put("procsRunning", asDouble(cur.procsRunning));
    s.put("procsBlocked", asDouble(cur.procsBlocked));
    for (String[] m : new String[][] {{"memAvailableBytes", "MemAvailable"}, {"memFreeBytes", "MemFree"},
        {"memBuffersBytes", "Buffers"}, {"memCachedBytes", "Cached"}, {"memShmemBytes", "Shmem"},
        {"swapFreeBytes", "SwapFree"}}) {
      s.put(m[0], cur.mem == null ? null : asDouble(cur.mem.get(m[1])));
    }
    s.put("diskReadBytesPerS", rate(prev.disk, cur.disk, 1, seconds, SECTOR_BYTES));
    s.put("diskWriteBytesPerS", rate(prev.disk, cur.disk, 3, seconds, SECTOR_BYTES));
    s.put("diskReadsPerS", rate(prev.disk, cur.disk, 0, seconds, 1));
    s.put("diskWritesPerS", rate(prev.disk, cur.disk, 2, seconds, 1));
    Double ioMsPerS = rate(prev.disk, cur.disk, 4, seconds, 1);
    s.put("diskBusyPct", ioMsPerS == null ? null : Math.min(100.0, ioMsPerS / 10.0));
    s.put("netRxBytesPerS", rate(prev.net, cur.net, 0, seconds, 1));
    s.put("netRxPacketsPerS", rate(prev.net, cur.net, 1, seconds, 1));
    s.put("netTxBytesPerS", rate(prev.net, cur.net, 2, seconds, 1));
    s.put("netTxPacketsPerS", rate(prev.net, cur.net, 3, seconds, 1));
    s.put("procCpuPct", cur.processCpuNs < 0 || prev.processCpuNs < 0 ? null
        : 100.0 * (cur.processCpuNs - prev.processCpuNs) / 1e9 / seconds);
    s.put("jvmThreads", (double) cur.threadStates[0]);
    s.put("jvmThreadsRunnable", (double) cur.threadStates[1]);
    s.put("jvmThreadsBlocked", (double) cur.threadStates[2]);
    s.put("jvmThreadsWaiting", (double) cur.threadStates[3]);
    putContainer(s, prev.container, cur.container, seconds);
    s.put("gcTimeMsPerS", (cur.gcMs - prev.gcMs) / seconds);
    s.put("gcCountPerS", (cur.gcCount - prev.gcCount) / seconds);
    s.put("heapUsedBytes", (double) cur.heap.getUsed());
    s.put("heapCommittedBytes", (double) cur.heap.getCommitted());
    return s;
  }

  /** The container's fields: CPU and I/O as rates, memory as levels, PSI as the percent of time stalled. */
  private static void putContainer(Map<String, Object> s, ContainerCounters.Reading a, ContainerCounters.Reading b,
      double seconds) {
    Long usage = delta(a, b, "cpuUsageNs");
    Long periods = delta(a, b, "cpuPeriods");
    Long throttledPeriods = delta(a, b, "cpuThrottledPeriods");
    Long throttledNs = delta(a, b, "cpuThrottledNs");
    s.put("cgroupCpuPct", usage == null ? null : 100.0 * usage / 1e9 / seconds);
    s.put("cgroupThrottledPct", periods == null || throttledPeriods == null ? null
        : periods > 0 ? 100.0 * throttledPeriods / periods : 0.0);
    s.put("cgroupThrottledMsPerS", throttledNs == null ? null : throttledNs / 1e6 / seconds);
    Long used = b.get("memUsedBytes");
    Long limit = b.get("memLimitBytes");
    s.put("cgroupMemUsedBytes", used == null ? null : used.doubleValue());
    s.put("cgroupMemUsedPct", used == null || limit == null || limit <= 0 ? null : 100.0 * used / limit);
    s.put("cgroupMemFailsPerS", perSecond(delta(a, b, "memFails"), seconds));
    s.put("cgroupMajorFaultsPerS", perSecond(delta(a, b, "majorFaults"), seconds));
    s.put("cgroupIoReadBytesPerS", perSecond(delta(a, b, "ioReadBytes"), seconds));
    s.put("cgroupIoWriteBytesPerS", perSecond(delta(a, b, "ioWriteBytes"), seconds));
    s.put("cgroupIoOpsPerS", perSecond(delta(a, b, "ioOps"), seconds));
    for (String resource : new String[] {"Cpu", "Io", "Memory"}) {
      for (String kind : new String[] {"Some", "Full"}) {
        Long stalledUs = delta(a, b, "psi" + resource + kind + "Us");
        s.put("psi" + resource + kind + "Pct", stalledUs == null ? null : Math.min(100.0, stalledUs / 1e4 / seconds));
      }
    }
  }

  /** The growth of a cumulative counter, or null when either reading lacks it or it went back (a group change). */
  private static Long delta(ContainerCounters.Reading a, ContainerCounters.Reading b, String key) {
    Long x = a == null ? null : a.get(key);
    Long y = b == null ? null : b.get(key);
    return x == null || y == null || y < x ? null : y - x;
  }

  private static Double perSecond(Long count, double seconds) {
    return count == null ? null : count / seconds;
  }

  private static Double[] cpuPercents(long[] a, long[] b) {
    Double[] out = new Double[5];
    if (a == null || b == null) return out;
    long total = 0;
    long[] d = new long[b.length];
    for (int i = 0; i < b.length; i++) {
      d[i] = Math.max(0, b[i] - a[i]);
      total += d[i];
    }
    if (total == 0) return out;
    out[0] = 100.0 * (d[0] + d[1]) / total; // user + nice
    out[1] = 100.0 * (d[2] + d[5] + d[6]) / total; // system + irq + softirq
    out[2] = 100.0 * d[4] / total;
    out[3] = 100.0 * d[7] / total;
    out[4] = 100.0 * d[3] / total;
    return out;
  }

  private static Double rate(long[] a, long[] b, int i, double seconds, long unit) {
    if (a == null || b == null) return null;
    return Math.max(0, b[i] - a[i]) * (double) unit / seconds;
  }

  private static Double asDouble(Long v) {
    return v == null ? null : v.doubleValue();
  }

  private static void readProcStat(Reading r) {
    for (String line : lines("/proc/stat")) {
      String[] f = line.trim().split("\\s+");
      if (f[0].equals("cpu")) {
        r.cpu = new long[8];
        for (int i = 0; i < 8 && i + 1 < f.length; i++) r.cpu[i] = Long.parseLong(f[i + 1]);
      } else if (f[0].equals("procs_running")) {
        r.procsRunning = Long.parseLong(f[1]);
      } else if (f[0].equals("procs_blocked")) {
        r.procsBlocked = Long.parseLong(f[1]);
      }
    }
  }

  private static double[] loadAverages() {
    List<String> l = lines("/proc/loadavg");
    if (l.isEmpty()) return null;
    String[] f = l.get(0).split("\\s+");
    return new double[] {Double.parseDouble(f[0]), Double.parseDouble(f[1]), Double.parseDouble(f[2])};
  }

  private static Map<String, Long> memInfo() {
    List<String> l = lines("/proc/meminfo");
    if (l.isEmpty()) return null;
    Map<String, Long> out = new LinkedHashMap<>();
    for (String line : l) {
      String[] f = line.split(":?\\s+");
      if (f.length >= 2) out.put(f[0], Long.parseLong(f[1]) * (f.length > 2 && f[2].equals("kB") ? 1024 : 1));
    }
    return out;
  }

  private static long[] diskStats() {
    List<String> l = lines("/proc/diskstats");
    if (l.isEmpty()) return null;
    long[] d = new long[5];
    for (String line : l) {
      String[] f = line.trim().split("\\s+");
      String name = f[2];
      if (f.length < 13 || name.startsWith("loop") || name.startsWith("ram")
          || !Files.exists(Paths.get("/sys/block", name))) {
        continue; // partitions and virtual devices would count the same I/O twice
      }
      d[0] += Long.parseLong(f[3]);
      d[1] += Long.parseLong(f[5]);
      d[2] += Long.parseLong(f[7]);
      d[3] += Long.parseLong(f[9]);
      d[4] += Long.parseLong(f[12]);
    }
    return d;
  }

  private static long[] netDev() {
    List<String> l = lines("/proc/net/dev");
    if (l.size() < 3) return null;
    long[] n = new long[4];
    for (String line : l.subList(2, l.size())) {
      String[] f = line.substring(line.indexOf(':') + 1).trim().split("\\s+");
      n[0] += Long.parseLong(f[0]);
      n[1] += Long.parseLong(f[1]);
      n[2] += Long.parseLong(f[8]);
      n[3] += Long.parseLong(f[9]);
    }
    return n;
  }

  private static long processCpuNs() {
    java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
    return os instanceof com.sun.management.OperatingSystemMXBean
        ? ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime() : -1;
  }

  private int[] threadStates() {
    int[] out = new int[4];
    for (ThreadInfo t : threads.getThreadInfo(threads.getAllThreadIds())) {
      if (t == null) continue; // ended since the id list was taken
      out[0]++;
      switch (t.getThreadState()) {
        case RUNNABLE: out[1]++; break;
        case BLOCKED: out[2]++; break;
        case WAITING: case TIMED_WAITING: out[3]++; break;
        default: break;
      }
    }
    return out;
  }

  private static List<String> lines(String path) {
    try {
      return Files.readAllLines(Paths.get(path));
    } catch (IOException | RuntimeException e) {
      return Collections.emptyList();
    }
  }
}
