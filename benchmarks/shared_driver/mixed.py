"""Short interactive queries arriving while long jobs run, in one shared driver: FIFO, FAIR, Pigeon, Yaq, both.

    python -m benchmarks.shared_driver --sf 1 --seeds 0,1,2 --gaps 4,2 --duration 40 --short-max 3

A notebook or Thrift server runs everyone's queries in one driver. Here two submitter threads run
TPC-H's long queries (Q9, Q18, Q21) back to back for the whole run, and short ones (Q6, Q14, Q19)
arrive in threads of their own at Poisson times (mean gap ``--gaps`` seconds, several rates). Each
arm runs in a fresh application: the tables are registered and every query runs once alone
(unmeasured: a warm-up that also gives the gate and the router each shape's work), then each rate
runs for ``--duration`` seconds of arrivals. Arms, as a user would set them up:

* ``fifo``: Spark's default scheduler;
* ``fair``: ``spark.scheduler.mode=FAIR`` with a pool per submitting thread, as Thrift servers and
  notebook users set it (every pool weight 1);
* ``pigeon``: FAIR with Pigeon's two pools, each query routed by its shape's measured work against
  ``--short-max`` (:class:`spark_plugin.pigeon.ShortJobPools`, a gate that never holds anything back);
* ``yaq``: Spark's FIFO scheduler behind Yaq's gate (SRJF, three jobs in flight);
* ``yaq+pigeon``: the gate in front of Pigeon's pools.

Per run: each short query's completion time (arrival to its last row, the wait at the gate
included) and each long query's. Per seed and rate, each arm's short-query median and long-query
p99 over FIFO's and FAIR's; then the mean ratio with a 95% t-interval over seeds. Arm order rotates
with the seed.
"""

from __future__ import annotations

import random
import statistics
import threading
import time
from pathlib import Path

from benchmarks.common import (benchmark_session, cluster_label, interval, interval_cells, markdown_table, report_header,
                               result_path, run_metadata, stop_and_clean, write_json, write_markdown)

SHORT_QUERIES = (6, 14, 19)
LONG_QUERIES = (9, 18, 21)
LONG_SUBMITTERS = 2
#: arm -> scheduler mode, whether a gate runs (and how many jobs it lets in), whether Pigeon's pools route.
ARMS = {
    "fifo": {"mode": "FIFO", "in_flight": None, "pigeon": False},
    "fair": {"mode": "FAIR", "in_flight": None, "pigeon": False},
    "pigeon": {"mode": "FAIR", "in_flight": 1_000_000, "pigeon": True},
    "yaq": {"mode": "FIFO", "in_flight": 3, "pigeon": False},
    "yaq+pigeon": {"mode": "FAIR", "in_flight": 3, "pigeon": True},
}


def arrivals(seed: int, gap_s: float, duration_s: float) -> list[tuple[float, int]]:
    """``(seconds after the start, short query)`` at Poisson times with mean gap ``gap_s``, seeded."""
    rng = random.Random(f"{seed}-{gap_s}")
    out, t = [], rng.expovariate(1.0 / gap_s)
    while t < duration_s:
        out.append((t, rng.choice(SHORT_QUERIES)))
        t += rng.expovariate(1.0 / gap_s)
    return out


class Driver:
    """Submits queries the way one arm's users do: plainly, in a pool per thread, or through the gate."""

    def __init__(self, spark, arm: str, texts: dict[int, str]):
        from spark_plugin.pigeon import ShortJobPools
        from spark_plugin.yaq import JobGate

        setup = ARMS[arm]
        self.spark, self.arm, self.texts = spark, arm, texts
        router = ShortJobPools.from_conf(spark.sparkContext) if setup["pigeon"] else None
        self.gate = None if setup["in_flight"] is None else JobGate(
            spark, policy="srjf", max_in_flight=setup["in_flight"], router=router)

    def run(self, query: int, thread_name: str) -> None:
        sql = self.texts[query]
        if self.gate is not None:
            self.gate.sql(sql)
            return
        sc = self.spark.sparkContext
        if self.arm == "fair":
            sc.setLocalProperty("spark.scheduler.pool", f"user-{thread_name}")
        sc.setJobGroup(f"q{query}-{thread_name}", f"TPC-H Q{query}")
        self.spark.sql(sql).collect()


def run_rate(driver: Driver, seed: int, gap_s: float, duration_s: float) -> dict:
    """One rate: long submitters loop until the last short query ends; returns completion times by class."""
    short, long_, lock = [], [], threading.Lock()
    done = threading.Event()
    start = time.perf_counter()

    def timed(query: int, name: str, out: list, arrival: float) -> None:
        driver.run(query, name)
        with lock:
            out.append({"query": query, "arrival_s": arrival - start, "seconds": time.perf_counter() - arrival})

    def long_submitter(k: int) -> None:
        order = random.Random(f"{seed}-long-{k}")
        while not done.is_set():
            timed(order.choice(LONG_QUERIES), f"long-{k}", long_, time.perf_counter())

    def short_query(i: int, at: float, query: int) -> None:
        delay = start + at - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        timed(query, f"short-{i}", short, time.perf_counter())

    longs = [threading.Thread(target=long_submitter, args=(k,), daemon=True) for k in range(LONG_SUBMITTERS)]
    shorts = [threading.Thread(target=short_query, args=(i, at, q), daemon=True)
              for i, (at, q) in enumerate(arrivals(seed, gap_s, duration_s))]
    admitted = len(driver.gate.admissions) if driver.gate else 0
    for t in longs + shorts:
        t.start()
    for t in shorts:
        t.join()
    done.set()
    for t in longs:
        t.join()
    waits = [a.waited_s for a in driver.gate.admissions[admitted:]] if driver.gate else []
    return {"short": short, "long": long_, "gate_waits_s": waits}


def run_arm(args, arm: str, seed: int) -> dict:
    """One arm of one seed in a fresh application: tables, a warm-up run of every query, then every rate."""
    from benchmarks.tpch.data import ensure_dataset, table_paths
    from benchmarks.tpch.queries import query_text

    conf = {"spark.scheduler.mode": ARMS[arm]["mode"], "spark.ui.showConsoleProgress": "false",
            "spark.driver.memory": "2g", "spark.pigeon.short.maxLength": f"{round(args.short_max * 1000)}ms"}
    spark = benchmark_session(args, ["telemetry"], conf=conf, app_name=f"shared-driver-{arm}-seed{seed}")
    app_id = spark.sparkContext.applicationId
    try:
        for table, folder in table_paths(ensure_dataset(args.data, args.sf, args.parts)).items():
            spark.read.parquet(str(folder)).createOrReplaceTempView(table)
        texts = {q: query_text(q, args.sf) for q in SHORT_QUERIES + LONG_QUERIES}
        driver = Driver(spark, arm, texts)
        warm = {}
        for q in SHORT_QUERIES + LONG_QUERIES:
            started = time.perf_counter()
            driver.run(q, "warm-up")
            warm[q] = time.perf_counter() - started
        runs = {str(gap): run_rate(driver, seed, gap, args.duration) for gap in args.gaps}
        return {"warm_up_s": warm, "runs": runs}
    finally:
        stop_and_clean(spark, app_id)


def summarize(run: dict) -> dict:
    """Short queries' median completion time and long queries' p99 (nearest rank) of one run."""
    long_times = sorted(r["seconds"] for r in run["long"])
    rank = max(0, -(-99 * len(long_times) // 100) - 1)
    return {"short_median_s": statistics.median(r["seconds"] for r in run["short"]),
            "long_p99_s": long_times[rank] if long_times else None,
            "longest_gate_wait_s": max(run["gate_waits_s"], default=None),
            "shorts": len(run["short"]), "longs": len(long_times)}


def compare(results: dict, arms: list[str]) -> dict:
    """Per rate, arm and baseline (``fifo``, ``fair``): each metric's ratio per seed and its interval."""
    out: dict = {}
    for gap, by_seed in results.items():
        for arm in arms:
            for base in ("fifo", "fair"):
                if base == arm or base not in arms:
                    continue
                for key in ("short_median_s", "long_p99_s"):
                    ratios = [r[arm][key] / r[base][key] for r in by_seed.values() if r[arm][key] and r[base][key]]
                    if ratios:
                        out.setdefault(gap, {}).setdefault(arm, {}).setdefault(base, {})[key] = {
                            "per_seed": ratios, **interval(ratios)}
    return out


def run(args) -> Path:
    from tqdm import tqdm

    meta = run_metadata(vars(args) | {"out": str(args.out), "data": str(args.data)})
    results: dict = {}
    raw: dict = {}
    with tqdm(total=len(args.seeds) * len(args.arms), desc="shared driver", unit="application") as bar:
        for index, seed in enumerate(args.seeds):
            shift = index % len(args.arms)
            for arm in args.arms[shift:] + args.arms[:shift]:
                bar.set_postfix_str(f"seed {seed}, {arm}")
                out = run_arm(args, arm, seed)
                raw.setdefault(str(seed), {})[arm] = out
                for gap, run_ in out["runs"].items():
                    results.setdefault(gap, {}).setdefault(str(seed), {})[arm] = summarize(run_)
                bar.update()
    payload = {"meta": meta, "arms": args.arms, "summary": results, "comparison": compare(results, args.arms),
               "raw": raw}
    path = write_json(result_path("shared_driver", "mixed.json", meta, args.out), payload)
    print(f"wrote {path} and {write_report(path)}")
    return path


def write_report(json_path: Path) -> Path:
    import json

    data = json.loads(Path(json_path).read_text())
    conf = data["meta"]["conf"]
    rows = []
    for gap, by_arm in data["comparison"].items():
        for arm, by_base in by_arm.items():
            for base, by_key in by_base.items():
                rows += [[f"{float(gap):g} s", arm, base, key, *interval_cells(c)] for key, c in by_key.items()]
    absolute = [[f"{float(gap):g} s", arm, f"{statistics.fmean(r[arm]['short_median_s'] for r in by_seed.values()):.2f}",
                 f"{statistics.fmean(r[arm]['long_p99_s'] for r in by_seed.values()):.1f}",
                 _longest_wait(by_seed.values(), arm),
                 sum(r[arm]["shorts"] for r in by_seed.values()), sum(r[arm]["longs"] for r in by_seed.values())]
                for gap, by_seed in data["summary"].items() for arm in data["arms"]]
    md = report_header(data["meta"], "Short queries beside long jobs in one shared driver") + [
        f"TPC-H SF {conf['sf']:g} (`{cluster_label(conf)}`). {LONG_SUBMITTERS} threads run Q"
        f"{', Q'.join(map(str, LONG_QUERIES))} back to back; Q{', Q'.join(map(str, SHORT_QUERIES))} arrive at Poisson "
        f"times for {conf['duration']:g} s per rate, each in its own thread. Every arm of every seed in a fresh "
        f"application after one unmeasured run of every query; arm order rotated by seed; seeds "
        f"{', '.join(map(str, conf['seeds']))}. Pigeon routes a query to the short pool when its predicted length "
        f"alone on every core is at most {conf.get('short_max', 10.0):g} s. Yaq's gate: SRJF, "
        f"{ARMS['yaq']['in_flight']} jobs in flight. Completion time = arrival to the last row (a gate's wait included).",
        "", markdown_table(["mean gap", "arm", "short median s (mean over seeds)", "long p99 s",
                            "longest wait at the gate s", "short queries", "long queries"], absolute), "",
        "Ratios, arm over baseline, per seed, then the mean with a 95% t-interval over seeds:", "",
        markdown_table(["mean gap", "arm", "over", "metric", "per seed", "mean [95% interval]",
                        "interval excludes 1"], rows), ""]
    return write_markdown(json_path, md)


def _longest_wait(runs, arm: str) -> str:
    waits = [w for r in runs if (w := r[arm]["longest_gate_wait_s"]) is not None]
    return f"{max(waits):.2f}" if waits else "-"
