"""``python -m benchmarks.advisor``: how well the scaling advisor predicts jobs at held-out executor counts.

``--workload tpch`` (default): the TPC-H harness runs every query ``--repeat`` times after a warm-up run (mode
vanilla) on an embedded local-cluster of each ``--executors`` count in turn (one core each), recording telemetry;
each query is then a job (job group ``q<N>``) with one run per count, its time the ``--repeat`` timed executions
together. ``--workload slaq``: the four SLAQ trainers, and SLAQ's runtime model with each scaling
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

from benchmarks.common import (add_master_option, markdown_table, report_header, result_path, run_metadata,
                               write_json, write_markdown)
from spark_plugin.advisor import load_run

from . import cluster_of, slaq, where
from .analysis import (ADVICE_HEADERS, advice_columns, advice_sentence, analyze, error_columns, error_headers,
                       recorded_run, summarize, summary_sentence)

THESIS = "USBA (thesis Table 3.1 workloads): 6-12% mean prediction error (Bayes, RF, SVM), 19% (NWeight)"


def collect(args, telemetry: Path) -> dict[int, Path]:
    """Run the TPC-H queries at each executor count; the telemetry file of each count's application."""
    from benchmarks.tpch import cli

    files = {}
    for m in args.executors:
        folder = telemetry / f"executors-{m}"
        master, conf = cluster_of(args.master, m)
        placement = ["--executors", str(m)] if args.master is None else ["--master", master]
        code = cli.main(["--sf", str(args.sf), "--queries", args.queries, "--modes", "vanilla", "--warmups", "1",
                         "--repeat", str(args.repeat), *placement, "--no-validate", "--no-progress",
                         "--out", str(telemetry / f"out-{m}"),
                         *(f"--conf={k}={v}" for k, v in {**conf, "spark.sparkrm.telemetry.dir": folder}.items())])
        if code != 0:
            raise SystemExit(f"the TPC-H harness failed at {m} executors (exit {code})")
        [files[m]] = sorted(folder.glob("*.telemetry.jsonl"))
    return files


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.advisor", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", choices=("tpch", "slaq"), default="tpch",
                        help="TPC-H queries or the SLAQ trainers (default tpch)")
    parser.add_argument("--executors", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 3, 4],
                        help="executor counts, one core each (default 1,2,3,4)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="tpch: timed executions per query and count (default 3); slaq: rounds")
    parser.add_argument("--sf", type=float, default=1.0, help="tpch: scale factor (default 1)")
    parser.add_argument("--queries", default="1-22", help="tpch: queries (default 1-22)")
    parser.add_argument("--rows", type=int, default=400_000, help="slaq: rows per generated data set (default 400000)")
    parser.add_argument("--partitions", type=int, default=4, help="slaq: partitions of each data set (default 4)")
    parser.add_argument("--iterations", type=int, default=10, help="slaq: iterations per trainer (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="slaq: seed of the trainers' hyperparameters")
    add_master_option(parser)
    parser.add_argument("--analyze", type=Path, default=None, metavar="RESULT_JSON",
                        help="fit the runs recorded in an earlier result again instead of running the workload")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default benchmarks/results/advisor)")
    args = parser.parse_args(argv)
    if len(args.executors) < 3 or min(args.executors) < 1:
        parser.error("--executors needs three or more counts >= 1 (each is predicted from the others)")
    workload, iterations = args.workload, None
    if args.analyze:
        recorded = json.loads(args.analyze.read_text())
        workload = recorded["meta"]["conf"].get("workload", "tpch")
        runs = {q: [recorded_run(r, recorded["meta"]["conf"]) for r in d["runs"]]
                for q, d in recorded["queries"].items()}
        iterations = recorded.get("iterations")
        conf = {**recorded["meta"]["conf"], "measured_at": recorded["meta"].get("git_sha")}
    elif workload == "slaq":
        with tempfile.TemporaryDirectory(prefix="advisor-bench-") as tmp:
            runs, iterations = slaq.measure(args, Path(tmp))
        conf = {"workload": workload, "master": args.master, "executors": args.executors, "repeat": args.repeat,
                "rows": args.rows, "partitions": args.partitions, "iterations": args.iterations, "seed": args.seed}
    else:
        with tempfile.TemporaryDirectory(prefix="advisor-bench-") as tmp:
            files = collect(args, Path(tmp))
            groups = sorted({q for q in _groups(files)}, key=lambda g: int(g[1:]))
            runs = {q: [load_run(files[m], q) for m in args.executors] for q in groups}
        conf = {"workload": workload, "master": args.master, "sf": args.sf, "queries": args.queries,
                "executors": args.executors, "repeat": args.repeat}
    queries = analyze(runs)
    meta = run_metadata(conf)
    payload = {"meta": meta, "queries": queries, "summary": summarize(queries)}
    if workload == "slaq":
        runtime = {kind: slaq.runtime_errors(its) for kind, its in iterations.items()}
        payload |= {"iterations": iterations, "runtime": runtime, "runtime_summary": slaq.summarize_runtime(runtime)}
    path = write_json(result_path("advisor", f"{workload}.json", meta, args.out), payload)
    print(slaq.write_report(path, THESIS) if workload == "slaq" else write_report(path))
    return 0


def _groups(files: dict[int, Path]) -> set[str]:
    from spark_plugin.telemetry_reader import read_telemetry

    first = next(iter(files.values()))
    return {g for g in read_telemetry(first)["job"].column("jobGroup").to_pylist() if g and g[1:].isdigit()}


def write_report(json_path: Path) -> Path:
    data = json.loads(Path(json_path).read_text())
    conf, s = data["meta"]["conf"], data["summary"]
    rows = [[q, " / ".join(f"{r['wall_s']:.1f}" for r in d["runs"]), *error_columns(d),
             *advice_columns(d)] for q, d in data["queries"].items()]
    counts = ", ".join(map(str, conf["executors"]))
    md = report_header(data["meta"], "Scaling advisor: TPC-H queries at held-out executor counts") + [
        f"TPC-H SF {conf['sf']:g}, each query run {conf['repeat']} times (timed together) at {counts} executors "
        f"(one core each, {where(conf)}), mode vanilla, after one warm-up run "
        "(job groups `q<N>-warmup`, left out)."
        + (f" Measured at commit {conf['measured_at']}, fitted again here." if conf.get("measured_at") else ""),
        "",
        f"Median over queries: leave-one-out error {summary_sentence(s, 'holdout')}; predicting the largest count "
        f"from the others: {summary_sentence(s, 'extrapolation')}. "
        f"{advice_sentence(s, len(data['queries']), 'queries')} Thesis: {THESIS}.",
        "",
        markdown_table(["query", f"wall s at {counts}", *error_headers(next(iter(data["queries"].values()))),
                        *ADVICE_HEADERS], rows),
        ""]
    return write_markdown(json_path, md)


if __name__ == "__main__":
    sys.exit(main())
