"""The driver-scale benchmark: Riffle's scheduler under many simulated executors and map outputs.

Pushed assignments (this checkout) against executors polling every ``--poll-ms`` (the scheduler of
``--poll-commit``, the last before pushes, compiled from git). Both drive the real driver-side scheduler
in one JVM (``benchmarks/riffle/jvm/SchedulerLoad.java``) with ``--executors`` simulated executors on hosts
of ``--executors-per-host``, map outputs arriving at ``--maps-per-s``, merges that take ``--merge-ms``; every
executor request runs on one thread, as in Spark's plugin endpoint. Reported per mode: requests the driver
handles per second during the map stage (executor requests plus pushes), the share of time that endpoint
thread is busy, and the delay from the map output that completes a merge to the merge reaching its executor.
Modes alternate round by round. Not simulated: the network and serialisation of Spark's RPC, which add the
same per-message cost to both modes (so polling's 100 requests per executor-second cost more than shown).
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from importlib.metadata import version
from io import BytesIO
from pathlib import Path

from benchmarks.common import markdown_table, report_header, result_path, run_metadata, write_json, write_markdown
from spark_plugin.jar import cache_dir, find_javac, jar_path, pyspark_jars_dir

#: The last commit whose executors polled the driver for merges.
POLL_COMMIT = "b65d6d7"
LOAD_SOURCE = Path(__file__).parent / "jvm" / "SchedulerLoad.java"
REPO = Path(__file__).resolve().parents[2]


def driver_scale(args) -> Path:
    with tempfile.TemporaryDirectory(prefix="riffle-driver-scale-") as tmp:
        load = compile_load(Path(tmp) / "load", jar_path())  # the poll mode's classes link to the old scheduler
        classpaths = {"push": [load, jar_path()], "poll": [load, poll_scheduler(Path(tmp), args.poll_commit)]}
        order = ["push", "poll"]
        runs = []
        for r in range(args.repeat):
            for mode in order[r % 2:] + order[:r % 2]:
                run = run_load(mode, classpaths[mode], args)
                runs.append({"round": r, **run})
                print(f"[round {r + 1}/{args.repeat}] {mode}: {run['rpc_per_s']:.0f} requests/s, endpoint busy "
                      f"{100 * run['endpoint_busy']:.1f}%, delay p50 {run['delay_ms']['p50']:.1f} ms "
                      f"p99 {run['delay_ms']['p99']:.1f} ms", file=sys.stderr)
    meta = run_metadata({"executors": args.executors, "executors_per_host": args.executors_per_host,
                         "maps": args.maps, "maps_per_s": args.maps_per_s, "block_kb": args.block_kb,
                         "reducers": args.reducers, "merge_ms": args.merge_ms, "poll_ms": args.poll_ms,
                         "poll_commit": args.poll_commit, "repeat": args.repeat})
    summary = {mode: {"rpc_per_s": statistics.median(x["rpc_per_s"] for x in runs if x["mode"] == mode),
                      "endpoint_busy": statistics.median(x["endpoint_busy"] for x in runs if x["mode"] == mode),
                      "delay_ms": {p: statistics.median(x["delay_ms"][p] for x in runs if x["mode"] == mode)
                                   for p in ("p50", "p95", "p99", "max")},
                      "merges": statistics.median(x["merges"] for x in runs if x["mode"] == mode)}
               for mode in order}
    path = write_json(result_path("riffle", "driver-scale.json", meta, args.out),
                      {"meta": meta, "runs": runs, "summary": summary})
    print(write_report(path))
    return path


def run_load(mode: str, classpath: list[Path], args) -> dict:
    """One run of the load driver; its last output line is the run's JSON."""
    cp = ":".join([*map(str, classpath), str(pyspark_jars_dir() / "*")])
    cmd = ["java", "-Xmx2g", "-cp", cp, "dev.sparkrm.riffle.SchedulerLoad", mode, str(args.executors),
           str(args.executors_per_host), str(args.maps), str(args.maps_per_s), str(args.block_kb * 1024),
           str(args.reducers), str(args.merge_ms), str(args.poll_ms)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    run = json.loads(out.stdout.strip().splitlines()[-1])
    if not run["delay_ms"]:  # every merge left for the end of the stage: no delay to time
        raise SystemExit(f"driver-scale: the {mode} run timed no merge delivered during the map stage "
                         f"({run['merges']} delivered, all at its end): the simulated maps ran too slowly on this "
                         f"machine; lower --maps-per-s (now {args.maps_per_s}) or --executors, or rerun on a quieter "
                         "machine")
    return run


def compile_load(out: Path, scheduler: Path) -> Path:
    """Compiles the load driver against ``scheduler`` (a jar or class folder); returns its class folder."""
    out.mkdir(parents=True)
    subprocess.run([find_javac(), "--release", "17", "-nowarn", "-cp", f"{scheduler}:{pyspark_jars_dir()}/*",
                    "-d", str(out), str(LOAD_SOURCE)], check=True)
    return out


def poll_scheduler(tmp: Path, commit: str) -> Path:
    """The JVM classes of ``commit`` (the polling scheduler), compiled from git once and kept in the user's cache
    (``$XDG_CACHE_HOME/sparkrm/riffle/poll-scheduler``, by commit and pyspark version): a commit's sources never
    change, and compiling them took 11 of the command's 15 s. A cached copy is whole or absent (renamed into
    place once compiled); ``tmp`` holds the compilation meanwhile."""
    known = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"],
                           capture_output=True, text=True)
    if known.returncode != 0:
        raise SystemExit(f"driver-scale: commit {commit} (the polling scheduler) is not in this checkout's history "
                         "(a shallow clone?); fetch it or give --poll-commit")
    cached = cache_dir() / "riffle" / "poll-scheduler" / f"{known.stdout.strip()}-pyspark-{version('pyspark')}"
    if cached.is_dir():
        return cached
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, "spark_plugin/jvm/src",
                              "shuffle_merge/jvm/src"], capture_output=True, check=True).stdout
    src = tmp / "poll-src"
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(src, filter="data")
    classes = tmp / "poll-scheduler"
    sources = [str(p) for p in src.rglob("*.java")]
    subprocess.run([find_javac(), "--release", "17", "-nowarn", "-cp", f"{pyspark_jars_dir()}/*",
                    "-d", str(classes), *sources], check=True)
    return _kept(classes, cached)


def _kept(classes: Path, cached: Path) -> Path:
    """``classes`` copied to ``cached`` (renamed into place whole), or ``classes`` where the cache cannot be
    written; a copy another run put there first is kept."""
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{cached.name}.", dir=cached.parent))
    except OSError:
        return classes
    try:
        shutil.copytree(classes, staging, dirs_exist_ok=True)
        staging.rename(cached)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
    return cached if cached.is_dir() else classes


def write_report(json_path: Path) -> Path:
    data = json.loads(Path(json_path).read_text())
    conf, summary = data["meta"]["conf"], data["summary"]
    rows = [[mode, s["rpc_per_s"], f"{100 * s['endpoint_busy']:.1f}%", s["delay_ms"]["p50"], s["delay_ms"]["p95"],
             s["delay_ms"]["p99"], s["delay_ms"]["max"], s["merges"]] for mode, s in summary.items()]
    md = report_header(data["meta"], "Riffle: driver scale, pushed assignments vs polling") + [
        f"{conf['executors']} simulated executors ({conf['executors_per_host']} per host), {conf['maps']} map "
        f"outputs at {conf['maps_per_s']}/s ({conf['reducers']} partitions of {conf['block_kb']} KiB), merges of "
        f"{conf['merge_ms']} ms; polling every {conf['poll_ms']} ms with the scheduler of commit "
        f"{conf['poll_commit']}. Medians of {conf['repeat']} rounds, modes alternated.",
        "",
        markdown_table(["mode", "requests/s at the driver", "endpoint busy", "delay p50 ms", "p95", "p99", "max",
                        "merges"], rows),
        "",
        "Requests per second count every executor request (polls, merge reports) and every push during the map "
        "stage. Delay: from the map output that completes a merge to the merge reaching its executor (leftover "
        "merges, issued when the stage ends, are left out).",
    ]
    return write_markdown(json_path, md)
