"""``python -m spark_plugin.rotary``: run a progressive TPC-H query with a live table.

    python -m spark_plugin.rotary run 5 --data ~/.cache/sparkrm/tpch/sf1-parts4 \\
        --until "UNTIL ACC >= 0.99 WITHIN 60 SECONDS"
    python -m spark_plugin.rotary list

``run`` redraws the estimate (value ± half-width of its interval) after every batch, with the
fraction processed, the elapsed time and the envelope accuracy, and stops when the criterion is
met (``--until``; default: every batch). ``--checkpoint DIR`` saves the state when it stops;
``--resume DIR`` continues a saved run.
"""

from __future__ import annotations

import argparse
import sys
from decimal import Decimal


def _format(value, half=None) -> str:
    if isinstance(value, (Decimal, float, int)) and not isinstance(value, bool):
        text = f"{float(value):,.4g}" if abs(float(value)) < 1e4 else f"{float(value):,.0f}"
        return text if half is None or half != half or half == 0 else f"{text} ± {float(half):,.3g}"
    return str(value)


def render(snapshot, spec, accuracy: float, max_rows: int = 20):
    from rich.table import Table

    table = Table(title=f"{spec.name}: batch {snapshot.batch}/{snapshot.batches} ({snapshot.fraction:.0%}), "
                        f"{snapshot.elapsed_s:.1f} s, envelope accuracy {accuracy:.3f}"
                        + (" - exact" if snapshot.final else f", {snapshot.confidence:.0%} intervals"))
    for column in snapshot.result.columns:
        table.add_column(column, justify="right" if column in spec.aggregates else "left")
    for i, row in snapshot.result.head(max_rows).iterrows():
        table.add_row(*[_format(row[c], snapshot.ci.at[i, c] if c in spec.aggregates else None)
                        for c in snapshot.result.columns])
    return table


def run(args) -> int:
    from rich.console import Console
    from rich.live import Live

    import spark_plugin

    from . import criteria
    from .accuracy import Envelope
    from .engine import ProgressiveQuery
    from .queries import load

    criterion = criteria.parse(args.until) if args.until else None
    if not args.resume:
        load(args.query)  # a bad query fails before Spark starts
    spark = spark_plugin.session(args.master, features=[], conf={"spark.ui.showConsoleProgress": "false"})
    try:
        job = (ProgressiveQuery.resume(spark, args.resume) if args.resume
               else ProgressiveQuery(spark, args.query, args.data, args.batches, args.seed, confidence=args.confidence))
        envelope, estimate = Envelope(job.spec, args.window), 0.0
        console = Console(width=None if sys.stdout.isatty() else 160)
        with Live(console=console, refresh_per_second=4) as live:
            for epoch, snapshot in enumerate(job, 1):
                previous, estimate = estimate, envelope.add(snapshot.result)
                live.update(render(snapshot, job.spec, estimate))
                progress = criteria.Progress(snapshot.elapsed_s, epoch, estimate, previous, complete=snapshot.final)
                if criterion and criterion.status(progress) != criteria.RUNNING:
                    console.print(f"{criterion}: {criterion.status(progress)}")
                    break
        if args.checkpoint:
            console.print(f"checkpoint: {job.checkpoint(args.checkpoint)}")
    finally:
        spark.stop()
    return 0


def main(argv=None) -> int:
    from .queries import available

    parser = argparse.ArgumentParser(prog="python -m spark_plugin.rotary", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the TPC-H queries with a progressive spec")
    r = sub.add_parser("run", help="run one query progressively")
    r.add_argument("query", nargs="?", help="TPC-H query number or a spec file")
    r.add_argument("--data", help="TPC-H Parquet folder (one sub-folder per table)")
    r.add_argument("--batches", type=int, default=20)
    r.add_argument("--seed", type=int, default=0, help="seed of the batch split and order")
    r.add_argument("--confidence", type=float, default=0.95)
    r.add_argument("--window", type=int, default=3, help="envelope window (default 3)")
    r.add_argument("--until", help="a completion criterion, e.g. 'UNTIL ACC >= 0.95 WITHIN 60 SECONDS'")
    r.add_argument("--master", default="local[*]")
    r.add_argument("--checkpoint", help="save the state here when the run stops")
    r.add_argument("--resume", help="continue from a checkpoint folder")
    args = parser.parse_args(argv)
    if args.command == "list":
        print(" ".join(f"Q{q}" for q in available()))
        return 0
    if not args.resume and not (args.query and args.data):
        parser.error("run needs a query and --data (or --resume DIR)")
    try:
        return run(args)
    except ValueError as e:  # bad query, criterion, data or checkpoint: say it without a traceback
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
