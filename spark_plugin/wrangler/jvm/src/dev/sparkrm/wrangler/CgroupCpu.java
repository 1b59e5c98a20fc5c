package dev.sparkrm.wrangler;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * CPU usage and throttling of the cgroup this process is in, from cgroup v2 ({@code cpu.stat}) or
 * v1 ({@code cpu/cpu.stat} and {@code cpuacct/cpuacct.usage}).
 *
 * <p>The cgroup is looked up again at every reading, because an operator (or the noisy-neighbour
 * benchmark) may move the executor into another group while it runs. Where no cgroup file can be
 * read, {@link #read} returns {@code null} and the sample carries nulls: a missing controller is
 * normal on macOS, in some containers and with cgroup v2 controllers not delegated.
 */
final class CgroupCpu {
  /** Cumulative usage and throttling counters, in nanoseconds and periods. */
  record Reading(long usageNs, long periods, long throttledPeriods, long throttledNs) {}

  private final Map<String, String> v1Mounts = new HashMap<>();
  private String v2Mount;

  CgroupCpu() {
    try {
      for (String line : Files.readAllLines(Paths.get("/proc/self/mountinfo"))) {
        String[] halves = line.split(" - ", 2);
        if (halves.length < 2) continue;
        String mountPoint = halves[0].split(" ")[4];
        String[] fs = halves[1].split(" ");
        if (fs[0].equals("cgroup2")) {
          v2Mount = mountPoint;
        } else if (fs[0].equals("cgroup") && fs.length > 2) {
          for (String opt : fs[2].split(",")) {
            if (opt.equals("cpu") || opt.equals("cpuacct")) v1Mounts.put(opt, mountPoint);
          }
        }
      }
    } catch (IOException e) {
      // no /proc: every reading is null
    }
  }

  /** The current reading, or {@code null} when this process's cgroup exposes no CPU counters. */
  Reading read() {
    try {
      Map<String, String> paths = groupPaths();
      Reading v1 = readV1(paths);
      return v1 != null ? v1 : readV2(paths.get(""));
    } catch (IOException | RuntimeException e) {
      return null;
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

  private Reading readV1(Map<String, String> paths) throws IOException {
    String cpuMount = v1Mounts.get("cpu");
    String acctMount = v1Mounts.get("cpuacct");
    if (cpuMount == null || acctMount == null || !paths.containsKey("cpu") || !paths.containsKey("cpuacct")) {
      return null;
    }
    Path stat = Paths.get(cpuMount, paths.get("cpu"), "cpu.stat");
    Path usage = Paths.get(acctMount, paths.get("cpuacct"), "cpuacct.usage");
    if (!Files.isReadable(stat) || !Files.isReadable(usage)) return null;
    Map<String, Long> s = keyValues(Files.readAllLines(stat));
    long usageNs = Long.parseLong(Files.readString(usage).trim());
    return new Reading(usageNs, s.getOrDefault("nr_periods", 0L), s.getOrDefault("nr_throttled", 0L),
        s.getOrDefault("throttled_time", 0L));
  }

  private Reading readV2(String group) throws IOException {
    if (v2Mount == null || group == null) return null;
    Path stat = Paths.get(v2Mount, group, "cpu.stat");
    if (!Files.isReadable(stat)) return null;
    Map<String, Long> s = keyValues(Files.readAllLines(stat));
    if (!s.containsKey("usage_usec")) return null;
    return new Reading(s.get("usage_usec") * 1000, s.getOrDefault("nr_periods", 0L),
        s.getOrDefault("nr_throttled", 0L), s.getOrDefault("throttled_usec", 0L) * 1000);
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
