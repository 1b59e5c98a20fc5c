package dev.sparkrm.wrangler;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What this executor's own container suffers, from the cgroup it is in: CPU use and throttling, memory
 * use against its limit and the times it hit the limit, major page faults, the block I/O it issued,
 * and pressure stall information (PSI).
 *
 * <p>Where Spark runs in containers (Kubernetes pods, YARN with cgroups, our emulated hosts) {@code /proc}
 * shows the whole machine, while the executor's cgroup shows its own share of it: a noisy neighbour in
 * the same container, or a quota too small for the work, appears here and nowhere else.
 *
 * <p>Sources, per controller: cgroup v1 ({@code cpu/cpu.stat}, {@code cpuacct/cpuacct.usage},
 * {@code memory/memory.{usage_in_bytes,limit_in_bytes,failcnt,stat}}, {@code
 * blkio/blkio.throttle.io_service{_bytes,d}_recursive}), else cgroup v2 ({@code cpu.stat}, {@code
 * memory.{current,max,events,stat}}, {@code io.stat}). PSI comes from the process's v2 group ({@code
 * {cpu,io,memory}.pressure}) where that file exists, which in hybrid mode needs the group to be a child
 * of the v2 root, else from the whole system ({@code /proc/pressure/*}); {@link Reading#psiFromGroup}
 * says which. The groups are looked up again at every reading, because an operator (or the
 * noisy-neighbour benchmark) may move the executor while it runs. A counter that cannot be read is
 * absent from the reading and its sample fields are null: a missing controller is normal on macOS, in
 * some containers and with v2 controllers not delegated.
 */
final class ContainerCounters {
  /** A limit at or above this is "no limit" (v1 writes a page-rounded 2^63 - 1). */
  private static final long NO_LIMIT = 1L << 60;
  private static final String[] PSI = {"cpu", "io", "memory"};

  /**
   * One reading: cumulative counters ({@code cpuUsageNs}, {@code cpuPeriods}, {@code cpuThrottledPeriods},
   * {@code cpuThrottledNs}, {@code memFails}, {@code majorFaults}, {@code ioReadBytes}, {@code ioWriteBytes},
   * {@code ioOps}, {@code psi<Resource><Some|Full>Us}) and levels ({@code memUsedBytes}, {@code memLimitBytes}).
   */
  record Reading(Map<String, Long> values, boolean psiFromGroup) {
    Long get(String key) {
      return values.get(key);
    }
  }

  private final Map<String, String> v1Mounts = new HashMap<>();
  private String v2Mount;

  ContainerCounters() {
    try {
      for (String line : Files.readAllLines(Paths.get("/proc/self/mountinfo"))) {
        String[] halves = line.split(" - ", 2);
        if (halves.length < 2) continue;
        String mountPoint = halves[0].split(" ")[4];
        String[] fs = halves[1].split(" ");
        if (fs[0].equals("cgroup2")) {
          v2Mount = mountPoint;
        } else if (fs[0].equals("cgroup") && fs.length > 2) {
          for (String opt : fs[2].split(",")) v1Mounts.put(opt, mountPoint);
        }
      }
    } catch (IOException e) {
      // no /proc: every reading is empty
    }
  }

  /** The current reading; empty values when this process's cgroups expose nothing. */
  Reading read() {
    Map<String, Long> out = new HashMap<>();
    Map<String, String> groups;
    try {
      groups = groupPaths();
    } catch (IOException | RuntimeException e) {
      return new Reading(out, false);
    }
    Path v2 = v2Mount == null || !groups.containsKey("") ? null : Paths.get(v2Mount, groups.get(""));
    quietly(() -> readCpu(groups, v2, out));
    quietly(() -> readMemory(groups, v2, out));
    quietly(() -> readIo(groups, v2, out));
    boolean fromGroup = true;
    for (String resource : PSI) {
      Path file = v2 == null ? null : v2.resolve(resource + ".pressure");
      if (file == null || !Files.isReadable(file)) {
        file = Paths.get("/proc/pressure", resource);
        fromGroup = false;
      }
      Path chosen = file;
      quietly(() -> readPressure(chosen, resource, out));
    }
    return new Reading(out, fromGroup);
  }

  private interface Read {
    void run() throws IOException;
  }

  private static void quietly(Read read) {
    try {
      read.run();
    } catch (IOException | RuntimeException e) {
      // this controller is absent or unreadable here: its fields stay null
    }
  }

  /** Controller (or "" for the v2 hierarchy) to this process's group path, from /proc/self/cgroup. */
  private static Map<String, String> groupPaths() throws IOException {
    Map<String, String> paths = new HashMap<>();
    for (String line : Files.readAllLines(Paths.get("/proc/self/cgroup"))) {
      String[] parts = line.split(":", 3);
      if (parts.length < 3) continue;
      if (parts[1].isEmpty()) paths.put("", parts[2]);
      for (String controller : parts[1].split(",")) paths.put(controller, parts[2]);
    }
    return paths;
  }

  /** The folder of this process's group in the v1 hierarchy of {@code controller}, or null. */
  private Path v1(Map<String, String> groups, String controller) {
    String mount = v1Mounts.get(controller);
    return mount == null || !groups.containsKey(controller) ? null : Paths.get(mount, groups.get(controller));
  }

  private void readCpu(Map<String, String> groups, Path v2, Map<String, Long> out) throws IOException {
    Path cpu = v1(groups, "cpu");
    Path acct = v1(groups, "cpuacct");
    if (cpu != null && acct != null && Files.isReadable(cpu.resolve("cpu.stat"))) {
      Map<String, Long> s = keyValues(Files.readAllLines(cpu.resolve("cpu.stat")));
      out.put("cpuUsageNs", Long.parseLong(Files.readString(acct.resolve("cpuacct.usage")).trim()));
      out.put("cpuPeriods", s.getOrDefault("nr_periods", 0L));
      out.put("cpuThrottledPeriods", s.getOrDefault("nr_throttled", 0L));
      out.put("cpuThrottledNs", s.getOrDefault("throttled_time", 0L));
    } else if (v2 != null && Files.isReadable(v2.resolve("cpu.stat"))) {
      Map<String, Long> s = keyValues(Files.readAllLines(v2.resolve("cpu.stat")));
      if (!s.containsKey("usage_usec")) return;
      out.put("cpuUsageNs", s.get("usage_usec") * 1000);
      out.put("cpuPeriods", s.getOrDefault("nr_periods", 0L));
      out.put("cpuThrottledPeriods", s.getOrDefault("nr_throttled", 0L));
      out.put("cpuThrottledNs", s.getOrDefault("throttled_usec", 0L) * 1000);
    }
  }

  private void readMemory(Map<String, String> groups, Path v2, Map<String, Long> out) throws IOException {
    Path mem = v1(groups, "memory");
    if (mem != null && Files.isReadable(mem.resolve("memory.usage_in_bytes"))) {
      out.put("memUsedBytes", readLong(mem.resolve("memory.usage_in_bytes")));
      long limit = readLong(mem.resolve("memory.limit_in_bytes"));
      if (limit < NO_LIMIT) out.put("memLimitBytes", limit);
      out.put("memFails", readLong(mem.resolve("memory.failcnt")));
      Map<String, Long> stat = keyValues(Files.readAllLines(mem.resolve("memory.stat")));
      out.put("majorFaults", stat.getOrDefault("total_pgmajfault", stat.getOrDefault("pgmajfault", 0L)));
    } else if (v2 != null && Files.isReadable(v2.resolve("memory.current"))) {
      out.put("memUsedBytes", readLong(v2.resolve("memory.current")));
      String max = Files.readString(v2.resolve("memory.max")).trim();
      if (!max.equals("max")) out.put("memLimitBytes", Long.parseLong(max));
      out.put("memFails", keyValues(Files.readAllLines(v2.resolve("memory.events"))).getOrDefault("max", 0L));
      out.put("majorFaults", keyValues(Files.readAllLines(v2.resolve("memory.stat"))).getOrDefault("pgmajfault", 0L));
    }
  }

  private void readIo(Map<String, String> groups, Path v2, Map<String, Long> out) throws IOException {
    Path blkio = v1(groups, "blkio");
    if (blkio != null && Files.isReadable(blkio.resolve("blkio.throttle.io_service_bytes_recursive"))) {
      Map<String, Long> bytes = sumByOperation(Files.readAllLines(blkio.resolve("blkio.throttle.io_service_bytes_recursive")));
      Map<String, Long> ops = sumByOperation(Files.readAllLines(blkio.resolve("blkio.throttle.io_serviced_recursive")));
      out.put("ioReadBytes", bytes.getOrDefault("Read", 0L));
      out.put("ioWriteBytes", bytes.getOrDefault("Write", 0L));
      out.put("ioOps", ops.getOrDefault("Read", 0L) + ops.getOrDefault("Write", 0L));
    } else if (v2 != null && Files.isReadable(v2.resolve("io.stat"))) {
      long read = 0;
      long write = 0;
      long ios = 0;
      for (String line : Files.readAllLines(v2.resolve("io.stat"))) {
        for (String field : line.trim().split("\\s+")) {
          String[] kv = field.split("=", 2);
          if (kv.length < 2) continue; // the device number
          switch (kv[0]) {
            case "rbytes": read += Long.parseLong(kv[1]); break;
            case "wbytes": write += Long.parseLong(kv[1]); break;
            case "rios": case "wios": ios += Long.parseLong(kv[1]); break;
            default: break;
          }
        }
      }
      out.put("ioReadBytes", read);
      out.put("ioWriteBytes", write);
      out.put("ioOps", ios);
    }
  }

  /** v1 blkio rows {@code "MAJ:MIN Operation N"} summed over devices; the {@code "Total N"} row is skipped. */
  private static Map<String, Long> sumByOperation(List<String> lines) {
    Map<String, Long> out = new HashMap<>();
    for (String line : lines) {
      String[] f = line.trim().split("\\s+");
      if (f.length == 3) out.merge(f[1], Long.parseLong(f[2]), Long::sum);
    }
    return out;
  }

  /** {@code "some avg10=.. avg60=.. avg300=.. total=US"} and the {@code full} row, as total stalled microseconds. */
  private static void readPressure(Path file, String resource, Map<String, Long> out) throws IOException {
    String name = "psi" + Character.toUpperCase(resource.charAt(0)) + resource.substring(1);
    for (String line : Files.readAllLines(file)) {
      String[] f = line.trim().split("\\s+");
      String kind = f[0].equals("some") ? "Some" : f[0].equals("full") ? "Full" : null;
      if (kind == null) continue;
      for (String field : f) {
        if (field.startsWith("total=")) out.put(name + kind + "Us", Long.parseLong(field.substring(6)));
      }
    }
  }

  private static long readLong(Path file) throws IOException {
    return Long.parseLong(Files.readString(file).trim());
  }

  private static Map<String, Long> keyValues(List<String> lines) {
    Map<String, Long> out = new HashMap<>();
    for (String line : lines) {
      String[] kv = line.trim().split("\\s+");
      if (kv.length == 2) out.put(kv[0], Long.parseLong(kv[1]));
    }
    return out;
  }
}
