"""Run TPC-H queries in several modes, interleaved, validated and timed.

Every mode gets its own worker process and embedded cluster (see
:mod:`.worker`), all started up front. For each query, each mode runs
``warmups`` untimed runs, then ``repeat`` timed runs; the first run of each mode
is checked against DuckDB. Modes take turns in an order that alternates from
run to run and from query to query, so slow drift of this shared machine (and
which mode finds the files in the page cache first) affects all modes alike and
the ratios stay honest. Without warm-ups (the default of a single timed run, the
quickstart's), every number is a first run of that query in that mode.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .data import ensure_dataset
from .modes import BASELINE
from .oracle import DuckDBOracle, ResultMismatch, compare
from .queries import order_columns, query_text
from .worker import PREFIX, decode


@dataclass
class RunConfig:
    """What to run; the command line fills it (see ``python -m benchmarks.tpch --help``)."""

    sf: float = 1.0
    parts: int = 4
    queries: list[int] = field(default_factory=lambda: list(range(1, 23)))
    modes: list[str] = field(default_factory=lambda: ["vanilla"])
    executors: int = 2
    executor_cores: int = 1
    executor_memory_mb: int = 2048
    master: str | None = None
    repeat: int = 1
    warmups: int = 0
    shuffle_partitions: int = 16
    validate: bool = True
    data_root: Path | None = None
    spark_conf: dict = field(default_factory=dict)

    def master_url(self) -> str:
        return self.master or (f"local-cluster[{self.executors},{self.executor_cores},"
                               f"{self.executor_memory_mb}]")

    def session_conf(self) -> dict:
        """Spark settings every mode shares (recorded in the report header); on the emulated cluster, also
        those it needs (the driver's address, executor sizes)."""
        from benchmarks.cluster import conf_for_master

        return {"spark.sql.shuffle.partitions": str(self.shuffle_partitions),
                "spark.sql.adaptive.enabled": "true",
                "spark.executor.memory": f"{self.executor_memory_mb}m",
                "spark.driver.memory": "2g",
                "spark.ui.showConsoleProgress": "false",
                **conf_for_master(self.master),
                **self.spark_conf}


class WorkerFailed(RuntimeError):
    """A mode's worker process died or a query failed in it."""


class ModeWorker:
    """The runner's handle on one worker process."""

    def __init__(self, mode: str, cfg: RunConfig, dataset: Path, log_path: Path):
        self.mode, self.log_path = mode, log_path
        cmd = [sys.executable, "-m", "benchmarks.tpch.worker", "--mode", mode, "--master", cfg.master_url(),
               "--dataset", str(dataset), "--queries", ",".join(map(str, cfg.queries)), "--sf", f"{cfg.sf:g}"]
        for key, value in cfg.session_conf().items():
            cmd += ["--conf", f"{key}={value}"]
        self._log = open(log_path, "w")
        # The worker runs where the harness was started, so that relative paths in --conf (a telemetry or
        # event-log folder) mean what the user meant; the repository goes on its import path instead.
        repo = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")]))}
        self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                                      text=True, env=env)

    def wait_ready(self) -> str:
        """Block until the session is up; return its application id."""
        return self._read()["app_id"]

    def ask(self, request: dict) -> dict:
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        answer = self._read()
        if "error" in answer:
            raise WorkerFailed(f"Q{answer.get('query')} failed in mode {self.mode}: {answer['error']}\n"
                               f"{answer.get('traceback', '')}")
        return answer

    def stop(self) -> None:
        if self._proc.poll() is None:
            try:
                self._proc.stdin.write(json.dumps({"stop": True}) + "\n")
                self._proc.stdin.flush()
                self._proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
        self._log.close()

    def _read(self) -> dict:
        for line in self._proc.stdout:
            if line.startswith(PREFIX):
                return json.loads(line[len(PREFIX):], object_hook=decode)
        tail = self.log_path.read_text()[-3000:] if self.log_path.exists() else ""
        raise WorkerFailed(f"The {self.mode} worker exited (code {self._proc.wait()}). "
                           f"End of its log {self.log_path}:\n{tail}")


def run(cfg: RunConfig, progress=None) -> dict:
    """Run the benchmark and return the results (see :mod:`.report` for the schema).

    The workers' Spark logs go to a temporary folder, removed after a successful
    run and named in the error of a failed one.

    Parameters
    ----------
    cfg : RunConfig
    progress : callable, optional
        Called as ``progress(query, mode, label)`` before each step.

    Raises
    ------
    DataError
        When the data set cannot be generated.
    ResultMismatch
        When a mode's result differs from DuckDB's.
    WorkerFailed
        When a worker dies or a query fails.
    """
    dataset = ensure_dataset(cfg.data_root, cfg.sf, cfg.parts)
    oracle = DuckDBOracle(dataset) if cfg.validate else None
    logs = Path(tempfile.mkdtemp(prefix="sparkrm-tpch-logs-"))
    workers = {m: ModeWorker(m, cfg, dataset, logs / f"worker-{m}.log") for m in cfg.modes}
    results = {}
    try:
        app_ids = {m: w.wait_ready() for m, w in workers.items()}
        for i, q in enumerate(cfg.queries):
            results[q] = _run_query(q, i, cfg, workers, oracle, progress)
    except (ResultMismatch, WorkerFailed) as e:
        raise type(e)(f"{e}\nSpark logs of the workers: {logs}") from e
    finally:
        for w in workers.values():
            w.stop()
    shutil.rmtree(logs, ignore_errors=True)
    return {"config": {**asdict(cfg), "data_root": str(cfg.data_root), "dataset": str(dataset),
                       "master": cfg.master_url(), "session_conf": cfg.session_conf()},
            "app_ids": app_ids, "queries": results}


def _run_query(q: int, position: int, cfg: RunConfig, workers: dict, oracle, progress) -> dict:
    sql = query_text(q, cfg.sf)
    per_mode = {m: {"wall_s": [], "harness_s": [], "metrics": None, "validated": False, "rows": None}
                for m in cfg.modes}
    for rep in range(-cfg.warmups, cfg.repeat):
        order = cfg.modes if (rep + position) % 2 else list(reversed(cfg.modes))
        for mode in order:
            first, warmup = rep == -cfg.warmups, rep < 0
            if progress:
                progress(q, mode, "warm-up" if warmup else f"run {rep + 1}/{cfg.repeat}")
            answer = workers[mode].ask({"query": q, "sql": sql, "collect": first and oracle is not None,
                                        "warmup": warmup})
            record = per_mode[mode]
            if first and oracle is not None:
                _validate(q, mode, sql, answer, oracle)
                record["validated"], record["rows"] = True, len(answer["rows"])
            if warmup:
                continue
            record["wall_s"].append(answer["wall_s"])
            record["harness_s"].append(answer["harness_s"])
            record["metrics"] = answer["metrics"]
            if "progressive" in answer:
                record.setdefault("progressive", []).append(answer["progressive"])
    for record in per_mode.values():
        record["min_s"] = min(record["wall_s"])
        record["median_s"] = statistics.median(record["wall_s"])
        if "progressive" in record:
            record["progressive_median_s"] = {k: _median_or_none([run[k] for run in record["progressive"]])
                                              for k in ("first_s", "accuracy95_s", "final_s")}
    base = BASELINE if BASELINE in cfg.modes else cfg.modes[0]
    ratios = {m: per_mode[m]["median_s"] / per_mode[base]["median_s"] for m in cfg.modes}
    return {"modes": per_mode, "baseline": base, "ratio_to_baseline": ratios}


def _median_or_none(values: list) -> float | None:
    """The median, or None when any run never got there (its estimate never reached the target)."""
    return None if any(v is None for v in values) else statistics.median(values)


def _validate(q: int, mode: str, sql: str, answer: dict, oracle) -> None:
    columns, expected = oracle.answer(sql)
    try:
        compare(answer["columns"], [tuple(r) for r in answer["rows"]], expected, order_columns(sql))
    except ResultMismatch as e:
        raise ResultMismatch(f"Q{q} in mode {mode} differs from DuckDB: {e}") from e
