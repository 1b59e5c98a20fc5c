"""``python -m benchmarks.advisor``: how well the scaling advisor predicts jobs at held-out executor counts.

``--workload tpch`` (default): in each of ``--rounds`` rounds the TPC-H harness runs every query ``--repeat``
times after a warm-up run (mode vanilla) on an embedded local-cluster of each ``--executors`` count (one core
each), the counts in the given order in even rounds and reversed in odd ones, recording telemetry; each query is
then a job (job group ``q<N>``) with one run per count: the median over rounds of its ``--repeat`` timed
executions together. ``--workload slaq``: the four SLAQ trainers, and SLAQ's runtime model with each scaling
(:mod:`benchmarks.advisor.slaq`). For every job and model (USBA, IPSO, and waves where the runs carry their stages'
task counts) each count is predicted from the other counts (leave-one-out), and the largest count from the
smaller ones (extrapolation); reported are the median errors per job and over jobs, beside the thesis's (USBA:
6-12% on Bayes, RF and SVM, 19% on NWeight, predicting from runs at N_p <= 64). On the embedded cluster this
2-core machine runs, past two executors the jobs cannot run faster, so the models must also find where scaling
stops; ``--master`` runs on the emulated hosts instead.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from benchmarks.common import (add_master_option, check_outputs, markdown_table, report_header, result_path,
                               run_metadata, write_json, write_markdown)
from spark_plugin.advisor import Run, load_run
from spark_plugin.arguments import Parser, whole_number_option
from spark_plugin.errors import SparkrmError, UsageError, print_error

from . import cluster_of, jobs, median_run, round_order, slaq, where
from .analysis import (ADVICE_HEADERS, advice_columns, advice_sentence, analyze, error_columns, error_headers,
                       recorded_run, refit_note, summarize, summary_sentence)

THESIS = "USBA (thesis Table 3.1 workloads): 6-12% mean prediction error (Bayes, RF, SVM), 19% (NWeight)"


def collect(args, telemetry: Path) -> dict[str, list[Run]]:
    """Run the TPC-H queries at each executor count and shuffle partitioning, ``args.rounds`` times; each query's
    run per setting (its ``source`` names the partitioning)."""
    from benchmarks.tpch import cli

    by_setting = {}
    for r in range(args.rounds):
        for m, p in round_order([(m, p) for m in args.executors for p in args.shuffle_partitions], r):
            folder = telemetry / f"round-{r}-executors-{m}-partitions-{p}"
            master, conf = cluster_of(args.master, m)
            placement = ["--executors", str(m)] if args.master is None else ["--master", master]
            code = cli.main(["--sf", str(args.sf), "--queries", args.queries, "--modes", "vanilla", "--warmups", "1",
                             "--repeat", str(args.repeat), *placement, "--shuffle-partitions", str(p),
                             "--no-validate", "--no-progress", "--out", str(telemetry / f"out-{r}-{m}-{p}"),
                             *(f"--conf={k}={v}" for k, v in {**conf, "spark.sparkrm.telemetry.dir": folder}.items())])
            if code != 0:
                raise SystemExit(f"the TPC-H harness failed at {m} executors, {p} shuffle partitions (exit {code})")
            [path] = sorted(folder.glob("*.telemetry.jsonl"))
            by_setting.setdefault((m, p), []).append(path)
    queries = sorted(_groups(next(iter(by_setting.values()))[0]), key=lambda g: int(g[1:]))
    return {q: [median_run(m, [load_run(path, q) for path in paths], f"spark.sql.shuffle.partitions={p}")
                for (m, p), paths in sorted(by_setting.items())] for q in queries}


def main(argv=None) -> int:
    parser = Parser(prog="python -m benchmarks.advisor", description=__doc__,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", choices=("tpch", "slaq", "jobs"), default="tpch",
                        help="TPC-H queries, the SLAQ trainers, or seven jobs of other kinds read from Spark's own "
                             "event logs (default tpch)")
    parser.add_argument("--executors", type=_counts, default=[1, 2, 3, 4],
                        help="executor counts, one core each (default 1,2,3,4)")
    parser.add_argument("--rounds", type=whole_number_option("--rounds", low=1, high=100), default=3,
                        help="rounds over the counts, their order reversed every other round; a count's time is the "
                             "median over rounds (default 3)")
    parser.add_argument("--repeat", type=whole_number_option("--repeat", low=1, high=100), default=2,
                        help="tpch, jobs: timed executions per query or job in each application (default 2)")
    parser.add_argument("--sf", type=float, default=1.0, help="tpch: scale factor (default 1)")
    parser.add_argument("--queries", default="1-22", help="tpch: queries (default 1-22)")
    parser.add_argument("--shuffle-partitions", type=_counts, default=[16],
                        help="tpch: spark.sql.shuffle.partitions settings, each run at every count; two or more "
                             "have the advisor choose the partitioning too (default 16, the harness's)")
    parser.add_argument("--rows", type=int, default=400_000, help="slaq: rows per generated data set (default 400000)")
    parser.add_argument("--partitions", type=int, default=4, help="slaq: partitions of each data set (default 4)")
    parser.add_argument("--iterations", type=int, default=10, help="slaq: iterations per trainer (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="slaq: seed of the trainers' hyperparameters")
    add_master_option(parser)
    parser.add_argument("--analyze", type=Path, default=None, metavar="RESULT_JSON",
                        help="fit the runs recorded in an earlier result again instead of running the workload")
    parser.add_argument("--out", type=Path, default=None,
                        help="output folder (default benchmarks/results/advisor); a result file already there is "
                             "overwritten only when this benchmark wrote it")
    args = parser.parse_args(argv)
    if len(args.executors) < 3 or min(args.executors) < 1:
        parser.error("--executors needs three or more counts >= 1 (each is predicted from the others)")
    try:
        return _run(args)
    except (SparkrmError, OSError) as e:
        return print_error(e)


def _run(args) -> int:
    """Check every input and output, then measure (or refit) and write: a refusal costs nothing."""
    recorded, recorded_runs = _recorded(args.analyze) if args.analyze else (None, None)
    workload = recorded["meta"]["conf"].get("workload", "tpch") if recorded else args.workload
    meta = run_metadata(_conf(args, workload, recorded))
    path = check_outputs(result_path("advisor", f"{workload}.json", meta, args.out))
    iterations = None
    if recorded:
        runs, iterations = recorded_runs, recorded.get("iterations")
    elif workload == "slaq":
        with tempfile.TemporaryDirectory(prefix="advisor-bench-") as tmp:
            runs, iterations = slaq.measure(args, Path(tmp))
    elif workload == "jobs":
        with tempfile.TemporaryDirectory(prefix="advisor-bench-") as tmp:
            runs = jobs.measure(args, Path(tmp))
    else:
        with tempfile.TemporaryDirectory(prefix="advisor-bench-") as tmp:
            runs = collect(args, Path(tmp))
    queries = analyze(runs)
    payload = {"meta": meta, "queries": queries, "summary": summarize(queries)}
    if workload == "slaq":
        runtime = {kind: slaq.runtime_errors(its) for kind, its in iterations.items()}
        payload |= {"iterations": iterations, "runtime": runtime, "runtime_summary": slaq.summarize_runtime(runtime)}
    write_json(path, payload)
    reports = {"slaq": lambda p: slaq.write_report(p, THESIS), "jobs": jobs.write_report}
    print(reports.get(workload, write_report)(path))
    return 0


def _is_result(data) -> bool:
    """Whether ``data`` (a parsed JSON file) is a result of this benchmark: its runs per job, their fit, the
    provenance."""
    return (isinstance(data, dict) and isinstance(data.get("meta"), dict)
            and isinstance(data["meta"].get("conf"), dict) and isinstance(data.get("queries"), dict)
            and "summary" in data)


def _recorded(path: Path) -> tuple[dict, dict[str, list[Run]]]:
    """The earlier result ``--analyze`` names and its runs per job, read before anything runs; one line when it is
    not such a result."""
    fix = "Pass a result this benchmark wrote, e.g. benchmarks/results/advisor/<date>-<sha>.tpch.json."
    try:
        data = json.loads(path.read_text())
    except OSError as e:
        raise UsageError(f"--analyze {path}: cannot be read ({e.strerror or e}). {fix}") from None
    except ValueError as e:
        raise UsageError(f"--analyze {path} is not JSON ({str(e).splitlines()[0]}). {fix}") from None
    try:
        if _is_result(data):
            return data, {q: [recorded_run(r, data["meta"]["conf"]) for r in d["runs"]]
                          for q, d in data["queries"].items()}
    except (TypeError, KeyError, ValueError):
        pass
    raise UsageError(f"--analyze {path} is JSON but not a result of this benchmark (its meta.conf and each job's "
                     f"runs). {fix}")


def _conf(args, workload: str, recorded: dict | None) -> dict:
    """What the result records of how it was measured."""
    if recorded:
        return {**recorded["meta"]["conf"], "measured_at": recorded["meta"].get("git_sha")}
    common = {"workload": workload, "master": args.master, "executors": args.executors, "rounds": args.rounds}
    if workload == "slaq":
        return {**common, "rows": args.rows, "partitions": args.partitions, "iterations": args.iterations,
                "seed": args.seed}
    if workload == "jobs":
        return {**common, "repeat": args.repeat}
    return {**common, "sf": args.sf, "queries": args.queries, "shuffle_partitions": args.shuffle_partitions,
            "repeat": args.repeat}


def _counts(text: str) -> list[int]:
    return [int(x) for x in text.split(",")]


def _groups(path: Path) -> set[str]:
    """The query job groups (``q<N>``, not the warm-ups) of a telemetry file."""
    from spark_plugin.telemetry_reader import read_telemetry

    return {g for g in read_telemetry(path)["job"].column("jobGroup").to_pylist() if g and g[1:].isdigit()}


def write_report(json_path: Path) -> Path:
    data = json.loads(Path(json_path).read_text())
    conf, s = data["meta"]["conf"], data["summary"]
    rows = [[q, " / ".join(f"{r['wall_s']:.1f}" for r in d["runs"]), *error_columns(d),
             *advice_columns(d)] for q, d in data["queries"].items()]
    counts, rounds = ", ".join(map(str, conf["executors"])), conf.get("rounds", 1)
    partitionings = conf.get("shuffle_partitions", [16])
    runs_at = (counts if len(partitionings) == 1
               else f"{counts} executors x {'/'.join(map(str, partitionings))} partitions")
    md = report_header(data["meta"], "Scaling advisor: TPC-H queries at held-out executor counts") + [
        f"TPC-H SF {conf['sf']:g}, each query run {_times(conf['repeat'])} (timed together) at {counts} executors "
        f"(one core each, {where(conf)}) and `spark.sql.shuffle.partitions` "
        f"{' and '.join(map(str, partitionings))}, mode vanilla, after one warm-up run "
        "(job groups `q<N>-warmup`, left out)"
        + (f"; {rounds} rounds, the counts' order reversed every other round, a count's time the median over rounds."
           if rounds > 1 else "; one application per count, the counts in order.")
        + refit_note(conf),
        "",
        f"Median over queries: leave-one-out error {summary_sentence(s, 'holdout')}; predicting the largest count "
        f"from the smaller ones: {summary_sentence(s, 'extrapolation')}. "
        f"{advice_sentence(s, len(data['queries']), 'queries')} Thesis: {THESIS}.",
        "",
        markdown_table(["query", f"wall s at {runs_at}", *error_headers(next(iter(data["queries"].values()))),
                        *ADVICE_HEADERS], rows),
        ""]
    return write_markdown(json_path, md)


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


if __name__ == "__main__":
    sys.exit(main())
