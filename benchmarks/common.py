"""What every benchmark shares: run metadata, result files, statistics and report pieces.

Results go to ``benchmarks/results/<feature>/<date>-<sha>.{json,md,png}``. A
run's JSON holds everything its report needs (metadata, configuration, raw
samples and ratios), so reports can be rendered again from the JSON alone.
"""

from __future__ import annotations

import datetime
import functools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from spark_plugin import ownership
from spark_plugin.errors import UsageError

RESULTS_DIR = Path(__file__).resolve().parent / "results"
PROJECT_DIR = Path(__file__).resolve().parent.parent


def add_master_option(parser) -> None:
    """``--master``: run on a given Spark master instead of the benchmark's own embedded cluster."""
    parser.add_argument("--master", default=None,
                        help="Spark master to run on instead of an embedded cluster; the emulated hosts' is "
                             "\"$(python -m benchmarks.cluster url)\", whose settings are then added")


def local_cluster_url(executors: int, executor_cores: int = 1) -> str:
    """The embedded cluster a benchmark runs on without ``--master``: 2 GiB per executor."""
    return f"local-cluster[{executors},{executor_cores},2048]"


def cluster_label(conf: dict, executor_cores: int = 1) -> str:
    """Where a run ran, from its recorded configuration: the ``--master`` given, or its own local-cluster."""
    return conf.get("master") or local_cluster_url(conf["executors"], executor_cores)


def benchmark_session(args, features, *, conf: dict, executor_cores: int = 1, app_name: str = "sparkrm-benchmark"):
    """A benchmark's session: on ``args.master`` with the settings it needs (see
    :func:`benchmarks.cluster.conf_for_master`), else on its own local-cluster of ``args.executors``.

    ``conf`` wins over the cluster's settings, so a benchmark may take fewer of its executors
    (``spark.cores.max``)."""
    import spark_plugin
    from benchmarks.cluster import conf_for_master

    master = getattr(args, "master", None)
    return spark_plugin.session(master or local_cluster_url(args.executors, executor_cores), features,
                                app_name=app_name, conf={**conf_for_master(master), **conf})


def git_sha() -> str:
    """Short commit id of the checkout, with ``-dirty`` when it has uncommitted changes."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=PROJECT_DIR, capture_output=True, text=True).stdout.strip()

    sha = git("rev-parse", "--short", "HEAD") or "nogit"
    return sha + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


@functools.cache
def java_version() -> str | None:
    """The first line of ``java -version`` (a JVM start: asked once per process, the JDK does not change)."""
    java = [line for line in subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()
            if not line.startswith("Picked up")]  # the JVM's note on JAVA_TOOL_OPTIONS, not its version
    return java[0] if java else None


def run_metadata(conf: dict) -> dict:
    """Versions, machine and configuration of this run."""
    import importlib.metadata as md

    def version(dist):
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            return None

    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "git_sha": git_sha(),
        "python": sys.version.split()[0],
        "pyspark": version("pyspark"),
        "tensorflow": version("tensorflow"),
        "java": java_version(),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)},
        "conf": conf,
    }


def result_path(feature: str, suffix: str, meta: dict, out_dir: Path | None = None) -> Path:
    """``<out_dir or results/feature>/<date>-<sha>.<suffix>``, its folder created."""
    folder = out_dir or RESULTS_DIR / feature
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--out {folder} is a file: pass the folder the results go to (created if missing).")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--out {folder}: the folder cannot be created ({e.strerror or e}). Choose a writable "
                         "folder.") from None
    return folder / f"{meta['date'][:10]}-{meta['git_sha']}.{suffix}"


def check_outputs(path: Path, *, what: str = "--out") -> Path:
    """Refuse, before a run, a result at ``path`` or a report or plot beside it that a benchmark of ours did not
    write: a refusal then costs the user nothing."""
    RESULT.check_writable(path, what=what)
    REPORT.check_writable(path.with_suffix(".md"), what=what)
    ownership.PLOT.check_writable(path.with_suffix(".png"), what=what)
    return path


def _is_result(path: Path) -> bool:
    """Whether ``path`` is a JSON object a benchmark of ours wrote (each carries ``meta``)."""
    try:
        return isinstance(payload := json.loads(Path(path).read_text()), dict) and "meta" in payload
    except (OSError, ValueError):
        return False


#: A benchmark's JSON result: replaced only by another run's result.
RESULT = ownership.FileKind("benchmark result", _is_result, ".json")


def write_json(path: Path, payload: dict) -> Path:
    """Write ``payload`` atomically: a reader never sees half a result, and no file of the user's is replaced."""
    path = RESULT.check_writable(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=1, sort_keys=True))
    os.replace(tmp, path)
    return path


def spread(samples) -> dict:
    """Median, minimum, maximum and count of ``samples``."""
    samples = list(samples)
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "n": len(samples)}


def interval(values: list[float]) -> dict:
    """Mean and 95% t-interval of ``values`` (one per seed or round); no interval from one value."""
    from scipy.stats import t

    mean = statistics.fmean(values)
    if len(values) < 2:
        return {"mean": mean, "low": None, "high": None}
    half = float(t.ppf(0.975, len(values) - 1)) * statistics.stdev(values) / len(values) ** 0.5
    return {"mean": mean, "low": mean - half, "high": mean + half}


def interval_cells(c: dict) -> list[str]:
    """Report cells of a ratio's :func:`interval` with its ``per_seed`` values: the values, mean [low, high],
    and whether the interval excludes 1."""
    def fmt(v):
        return "-" if v is None else f"{v:.2f}"

    excludes = c["low"] is not None and (c["high"] < 1 or c["low"] > 1)
    return [" ".join(f"{r:.2f}" for r in c["per_seed"]), f"{c['mean']:.2f} [{fmt(c['low'])}, {fmt(c['high'])}]",
            "yes" if excludes else "no"]


def geomean_interval(ratios: list[float]) -> dict:
    """Geometric mean of ``ratios`` and its 95% t-interval, taken in log space (``low``/``high`` None from one)."""
    import math

    ci = interval([math.log(r) for r in ratios])
    return {"geomean": math.exp(ci["mean"]),
            "low": math.exp(ci["low"]) if ci["low"] is not None else None,
            "high": math.exp(ci["high"]) if ci["high"] is not None else None}


def markdown_table(headers, rows) -> str:
    """A Markdown table; floats are shown with three significant digits."""
    def cell(v):
        return f"{v:.3g}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def report_header(meta: dict, title: str) -> list[str]:
    """Title and provenance lines of a Markdown report."""
    return [f"# {title}", "",
            f"{meta['date']} · commit {meta['git_sha']} · pyspark {meta['pyspark']} · {meta['java']} · "
            f"{meta['machine']['cpus']} CPUs", ""]


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend: benchmarks run on machines without a display."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, png: Path, *, dpi: int = 120) -> None:
    """Lay out ``fig``, write it to ``png`` and close it (open figures hold memory until the process ends).

    A PNG already at ``png`` is replaced only when sparkrm saved it (spark_plugin.ownership)."""
    fig.tight_layout()
    try:
        ownership.save_figure(fig, png, dpi=dpi)
    finally:
        pyplot().close(fig)


def _is_report(path: Path) -> bool:
    """Whether ``path`` is a Markdown report of ours: a title, then the provenance line of :func:`report_header`."""
    try:
        with open(path, encoding="utf-8") as f:
            head = [f.readline() for _ in range(4)]
    except (OSError, ValueError):
        return False
    return head[0].startswith("# ") and any(" · commit " in line for line in head[1:])


#: A benchmark's Markdown report beside its result: replaced only by another report.
REPORT = ownership.FileKind("benchmark report", _is_report, ".md")


def write_markdown(json_path, lines: list[str] | str) -> Path:
    """Write a report's lines next to its JSON as ``<run>.md`` (over a report of ours only); returns that path."""
    md_path = REPORT.check_writable(Path(json_path).with_suffix(".md"))
    md_path.write_text(lines if isinstance(lines, str) else "\n".join(lines))
    return md_path


def stop_and_clean(session, app_id: str) -> None:
    """Stop ``session`` (again, if a test did), its driver JVM, and the worker folders of local-cluster.

    The driver JVM must go too: spark-submit turns the first session's ``--conf`` entries into
    JVM system properties, which every later SparkConf in that JVM would inherit, so one
    module's settings (a fault switched on, say) would leak into the next module's session.
    """
    import pyspark

    session.stop()
    shutdown_driver_jvm()
    shutil.rmtree(Path(pyspark.__file__).parent / "work" / app_id, ignore_errors=True)


def executor_pid(spark, executor_id: str) -> int:
    """The pid of this application's executor JVM ``executor_id`` (local-cluster and the emulated hosts run them here).

    Matched by the driver's URL: two local-clusters started in the same second (parallel test modules)
    give their applications the same id.
    """
    driver = f":{spark.sparkContext.getConf().get('spark.driver.port')}".encode()
    for proc in Path("/proc").iterdir():
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (b"--driver-url" in args and args[args.index(b"--driver-url") + 1].endswith(driver)
                and args[args.index(b"--executor-id") + 1] == executor_id.encode()):
            return int(proc.name)
    raise AssertionError(f"no executor {executor_id} of the driver at port {driver.decode()[1:]} among this "
                         "machine's processes")


def shutdown_driver_jvm() -> None:
    """End pyspark's gateway JVM, so that the next session starts a fresh one with its own conf."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    gateway.shutdown()
    if proc is not None:
        proc.stdin.close()  # the gateway JVM exits when its stdin closes
        proc.wait(timeout=60)
    SparkContext._gateway = None
    SparkContext._jvm = None


def labelled_names_problem(names: list, known, flag: str) -> str | None:
    """Why ``names`` (each ``NAME`` or ``NAME@LABEL``, a second run under another name) cannot run, or None.

    A name not in ``known``, or one given twice: an A/A run names it again under a label instead.
    """
    unknown = [n for n in names if n.partition("@")[0] not in known]
    if unknown:
        return f"unknown {flag} {unknown}; choose from {','.join(known)}"
    if len(set(names)) != len(names):
        return (f"a name is given twice in {flag} {','.join(names)}; run it again under a label instead, "
                f"e.g. {names[0]},{names[0]}@again")
    return None

