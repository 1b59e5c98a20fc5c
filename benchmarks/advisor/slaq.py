"""The SLAQ trainers at several executor counts: runs for the scaling advisor, iteration times for SLAQ's runtime model.

Every round starts one embedded local-cluster per executor count (one core each; the counts run in the given order
in even rounds and reversed in odd ones), caches the SLAQ benchmark's generated data sets in ``--partitions``
partitions and runs each of the four trainers twice, ``--iterations`` iterations each:

* as a user runs it on a cluster of that size: every partition each iteration (job group ``<kind>``), the run
  the advisor reads from the application's telemetry;
* as SLAQ runs it when it grants that many cores: the data coalesced to one task per core (job group
  ``<kind>-slaq``), each iteration's wall time and its tasks' CPU seconds recorded (the first left out: it warms
  the Python workers).

Each count's iteration time is then predicted by SLAQ's :class:`~spark_plugin.slaq.RuntimeModel` fed the other
counts' iterations interleaved (as for a job whose cores change every epoch), with ``scaling="linear"``
(overhead + c*S/N, one overhead for every count) and ``scaling="ipso"`` (an overhead that grows with the cores).
"""

from __future__ import annotations

import statistics
from itertools import chain, zip_longest
from pathlib import Path

from benchmarks.common import markdown_table, report_header, write_markdown
from benchmarks.slaq.workload import KINDS, JobSpec, PinnedJob, datasets, generate, trainer
from spark_plugin.advisor import load_run

from . import cluster_of, median_run, round_order, where
from .analysis import (ADVICE_HEADERS, advice_columns, advice_sentence, error_columns, error_headers, refit_note,
                       summary_sentence)

SCALINGS = ("linear", "ipso")


def measure(args, folder: Path) -> tuple[dict, dict]:
    """``({kind: [Run per count]}, {kind: {count: [[wall_s, cpu_s], ...]}})`` over ``args.rounds`` rounds.

    A count's run is the median over rounds of its wall time (and task count).
    """
    import spark_plugin

    specs = [JobSpec(s.name, s.kind, 0.0, {**s.params, "max_iter": args.iterations})
             for s in generate(len(KINDS), 1.0, args.seed)]
    rounds, iterations = {}, {kind: {} for kind in KINDS}
    for r in range(args.rounds):
        for m in round_order(args.executors, r):
            telemetry = folder / f"round-{r}-executors-{m}"
            master, conf = cluster_of(args.master, m)
            spark = spark_plugin.session(master, ["telemetry"], app_name=f"advisor-slaq-{m}",
                                         conf={**conf, "spark.sparkrm.telemetry.dir": str(telemetry),
                                               "spark.driver.memory": "2g", "spark.ui.showConsoleProgress": "false"})
            try:
                for kind, its in _train(spark.sparkContext, specs, m, args).items():
                    iterations[kind].setdefault(m, []).extend(its)
            finally:
                spark.stop()
            [path] = telemetry.glob("*.telemetry.jsonl")
            for kind in KINDS:
                rounds.setdefault(kind, {}).setdefault(m, []).append(load_run(path, kind))
    runs = {kind: [median_run(m, rs) for m, rs in sorted(by_count.items())] for kind, by_count in rounds.items()}
    return runs, iterations


def _train(sc, specs: list[JobSpec], cores: int, args) -> dict:
    """Each trainer on every partition, then on ``cores`` tasks; the second's iterations (first left out)."""
    data = datasets(sc, args.rows, partitions=args.partitions)
    out = {}
    try:
        for spec in specs:
            sc.setJobGroup(spec.kind, f"{spec.kind} on every partition")
            trainer(spec).fit(data[spec.kind], PinnedJob(args.partitions))
            sc.setJobGroup(f"{spec.kind}-slaq", f"{spec.kind} on {cores} cores")
            pinned = PinnedJob(cores)
            trainer(spec).fit(data[spec.kind], pinned)
            out[spec.kind] = [list(it) for it in pinned.iterations[1:] if it[1] and it[1] > 0]
    finally:
        for d in {id(d): d for d in data.values()}.values():
            d.unpersist()
    return out


def runtime_errors(iterations: dict) -> dict:
    """Per held-out count: the median measured iteration time and each scaling's prediction from the other counts."""
    from spark_plugin.slaq import RuntimeModel

    counts = sorted(iterations, key=int)
    out = {}
    for held in counts:
        measured = statistics.median(wall for wall, _ in iterations[held])
        row = {"measured_s": measured}
        others = [[(int(n), it) for it in iterations[n]] for n in counts if n != held]
        for scaling in SCALINGS:
            model = RuntimeModel(scaling=scaling)
            for n, (wall, cpu) in (x for x in chain.from_iterable(zip_longest(*others)) if x is not None):
                model.update(cpu, wall_s=wall, cores=n)
            predicted = model.iteration_time(int(held))
            row[scaling] = {"predicted_s": predicted, "error": abs(predicted - measured) / measured}
        out[str(held)] = row
    return out


def summarize_runtime(by_kind: dict) -> dict:
    """Median error of each scaling over every trainer and held-out count."""
    return {scaling: statistics.median(row[scaling]["error"] for rows in by_kind.values() for row in rows.values())
            for scaling in SCALINGS}


def write_report(json_path: Path, thesis: str) -> Path:
    import json

    data = json.loads(Path(json_path).read_text())
    conf, s, rt = data["meta"]["conf"], data["summary"], data["runtime_summary"]
    counts, first = ", ".join(map(str, conf["executors"])), next(iter(data["queries"].values()))
    runs = [[kind, " / ".join(f"{r['wall_s']:.2f}" for r in d["runs"]), *error_columns(d, ("holdout",)),
             *advice_columns(d)] for kind, d in data["queries"].items()]
    runtime = [[kind, held, f"{row['measured_s']:.3f}",
                *(f"{row[s]['predicted_s']:.3f} ({100 * row[s]['error']:.0f}%)" for s in SCALINGS)]
               for kind, rows in data["runtime"].items() for held, row in rows.items()]
    md = report_header(data["meta"], "Scaling advisor and SLAQ's runtime model: the SLAQ trainers") + [
        f"{conf['rows']} rows per generated data set in {conf['partitions']} partitions, {conf['iterations']} "
        f"iterations per trainer, at {counts} one-core executors ({where(conf)}), "
        f"{conf.get('rounds', conf.get('repeat'))} rounds, the counts' order reversed every other round. "
        "A run is a trainer's iterations on every partition (median over rounds)."
        + refit_note(conf),
        "",
        f"**Advisor**: median leave-one-out error over the trainers {summary_sentence(s, 'holdout')}. "
        f"{advice_sentence(s, len(data['queries']), 'trainers')} Thesis: {thesis}.",
        "",
        markdown_table(["trainer", f"wall s at {counts}", *error_headers(first, ("holdout",)), *ADVICE_HEADERS],
                       runs),
        "",
        f"**SLAQ's runtime model** (one task per granted core; each count's median iteration time predicted from "
        f"the other counts' iterations): median error linear (overhead + c*S/N) **{100 * rt['linear']:.1f}%**, "
        f"ipso (overhead + q*N + c*S/N) **{100 * rt['ipso']:.1f}%**.",
        "",
        markdown_table(["trainer", "held-out cores", "measured s", "linear", "ipso"], runtime),
        ""]
    return write_markdown(json_path, md)
