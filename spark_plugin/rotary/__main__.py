"""``python -m spark_plugin.rotary``: run a progressive TPC-H query with a live table.

    python -m spark_plugin.rotary run 5 --data ~/.cache/sparkrm/tpch/sf1-parts4 \\
        --until "UNTIL ACC >= 0.99 WITHIN 60 SECONDS"
    python -m spark_plugin.rotary list
    python -m spark_plugin.rotary sql "select l_returnflag, sum(l_quantity) from lineitem group by l_returnflag" \\
        --table lineitem=/data/lineitem --until "UNTIL ACC >= 0.99"

``run`` redraws the estimate (value ± half-width of its interval) after every batch, with the
fraction processed, the elapsed time and the envelope accuracy, and stops when the criterion is
met (``--until``; default: every batch). ``--checkpoint DIR`` saves the state when it stops;
``--resume DIR`` continues a saved run (``sql`` too: the query and its ``--table`` views come from the
checkpoint, and a table that changed since is refused). ``sql`` runs any plain aggregate query over your
own tables, its progressive form derived from Spark's analysis of it; one it cannot batch runs exactly
and says why.
``prepare`` splits a table into random batches once (resumable), by a key you name or, given queries
(``--query``), each fact table by the key its queries need; ``sql`` reads the layouts it finds.

Bad input exits with status 2 and one line (``error: ...``) naming the argument or file and the
fix. Everything that needs no Spark (criterion, query, folders, numbers, master URL) is checked
before the JVM starts; a damaged Parquet file is reported by the file when Spark meets it.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from decimal import Decimal
from pathlib import Path

from ..arguments import Parser
from ..errors import SparkrmError, UsageError, print_error

#: Spark master URLs the command line accepts (what Spark itself parses); anything else is refused before
#: a JVM starts.
_MASTER = re.compile(r"local(\[(\*|\d+)(,\s*\d+)?\])?|local-cluster\[\d+,\s*\d+,\s*\d+\]|yarn|"
                     r"(spark|k8s|mesos)://\S+")
LOG_LEVELS = ("ALL", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF")


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


def check(args):
    """Check every argument that needs no Spark, before a JVM starts; return the parsed criterion (or None).

    Raises
    ------
    SparkrmError
        A ``ValueError`` too, whose one-line message names the argument or file and the fix:
        :class:`~spark_plugin.errors.UsageError`, :class:`.criteria.CriterionError`,
        :class:`.queries.QuerySpecError` or :class:`.batches.BatchDataError`.
    """
    from .batches import check_data
    from .engine import read_state
    from .spec import load

    if not args.resume and not (args.query and args.data):
        raise UsageError("run needs a query and --data (or --resume DIR): e.g. run 6 --data "
                         "~/.cache/sparkrm/tpch/sf1-parts4")
    _check_master(args)
    criterion = _criterion(args)
    if args.resume:
        try:
            state = read_state(args.resume)
        except ValueError as e:
            raise UsageError(f"--resume {e}; give a folder written by --checkpoint") from None
        if "sql" in state:
            raise UsageError(f"--resume {args.resume} holds a plain query's run: continue it with sql --resume")
        try:
            load(state["query"])
            check_data(state["data"])
        except SparkrmError as e:
            raise UsageError(f"--resume {args.resume}: its run cannot continue: {e}") from None
    else:
        load(args.query)
        check_data(args.data)
    _check_checkpoint(args)
    return criterion


def _check_checkpoint(args) -> None:
    """A --checkpoint folder: missing, empty or a checkpoint of Rotary's (it is replaced), and writable."""
    from .engine import check_checkpoint

    if args.checkpoint:
        check_checkpoint(args.checkpoint, what="--checkpoint")


def _session(args):
    """The Spark session of a command, its errors kept to the one line the command prints: Spark logs at
    ``--log-level`` (default FATAL), and pyspark's logger of failed queries (their Java stack as JSON) off."""
    import spark_plugin

    spark = spark_plugin.session(args.master, features=[], conf={"spark.ui.showConsoleProgress": "false"})
    spark.sparkContext.setLogLevel(args.log_level)
    logging.getLogger("SQLQueryContextLogger").disabled = True
    return spark


def run(args, criterion=None) -> int:
    """Run the query of ``args`` (already :func:`check`-ed) with a live table; 0 when it ends."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException
    from rich.console import Console
    from rich.live import Live

    from ..shared import criteria
    from .accuracy import Envelope
    from .batches import damaged_file_error
    from .engine import ProgressiveQuery, read_state

    spark = _session(args)
    data = read_state(args.resume)["data"] if args.resume else args.data
    try:
        job = (ProgressiveQuery.resume(spark, args.resume) if args.resume
               else ProgressiveQuery(spark, args.query, args.data, args.batches, args.seed, confidence=args.confidence))
        envelope, estimate = Envelope(job.spec, args.window), 0.0
        console = Console(width=None if sys.stdout.isatty() else 160)
        with Live(console=console, refresh_per_second=4) as live:
            for epoch, snapshot in enumerate(job, 1):
                previous, estimate = estimate, (1.0 if snapshot.final else envelope.add(snapshot.result))
                live.update(render(snapshot, job.spec, estimate))
                progress = criteria.Progress(snapshot.elapsed_s, epoch, estimate, previous, complete=snapshot.final)
                if criterion and criterion.status(progress) != criteria.RUNNING:
                    console.print(f"{criterion}: {criterion.status(progress)}")
                    break
        if args.checkpoint:
            console.print(f"checkpoint: {job.checkpoint(args.checkpoint)}")
    except (Py4JJavaError, PySparkException) as e:
        damaged = damaged_file_error(str(e), data)  # read while the JVM that holds the Java causes still runs
        if damaged is None:
            raise
        raise damaged from None
    finally:
        spark.stop()
    return 0


def check_sql(args):
    """Check a ``sql`` command's arguments that need no Spark; return the parsed criterion (or None). A
    ``--resume`` takes its query, and its ``--table`` views unless given again, from the checkpoint."""
    from .engine import read_state

    if args.resume:
        try:
            state = read_state(Path(args.resume).expanduser())
        except ValueError as e:
            raise UsageError(f"--resume {e}; give a folder written by sql --checkpoint") from None
        if "sql" not in state:
            raise UsageError(f"--resume {args.resume} holds a TPC-H spec's run: continue it with run --resume")
        if args.query and " ".join(args.query.split()) != " ".join(state["sql"].split()):
            raise UsageError(f"--resume {args.resume} continues its own query; leave the query out (or run it "
                             "from the start without --resume)")
        args.query = state["sql"]
        args.table = args.table or state.get("context", {}).get("tables")
    if not (args.query or "").strip():
        raise UsageError("sql needs a query, e.g. sql \"select l_returnflag, sum(l_quantity) from lineitem group "
                         "by l_returnflag\" --table lineitem=/data/lineitem")
    _check_master(args)
    _check_views(args.table)
    if args.plot:
        _check_plot(Path(args.plot).expanduser())
    _check_checkpoint(args)
    return _criterion(args)


def _check_plot(path: Path) -> None:
    """A --plot image: matplotlib installed, a PNG file that is new or a plot sparkrm saved (never another
    file, nor a folder), in a folder that exists (it is created) and can be written."""
    import importlib.util

    from ..ownership import PLOT

    if importlib.util.find_spec("matplotlib") is None:
        raise UsageError("--plot needs matplotlib: pip install matplotlib (or sparkrm[bench])")
    if path.suffix.lower() != ".png":
        raise UsageError(f"--plot {path}: name a PNG image file, ending in .png")
    PLOT.check_writable(path, what="--plot")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise UsageError(f"--plot {path}: {path.parent} is not a writable folder; choose another")


def _check_views(views) -> None:
    """``--table NAME=PATH`` options: each a name and an existing Parquet file or folder."""
    for table in views or []:
        name, eq, path = table.partition("=")
        if not eq or not name.strip().isidentifier() or not path.strip():
            raise UsageError(f"--table {table!r} must be NAME=PATH (a Parquet file or folder), e.g. "
                             "--table sales=/data/sales")
        if not Path(path).expanduser().exists():
            raise UsageError(f"--table {table!r}: {path} does not exist; give a Parquet file or folder")


def _register_views(spark, views) -> None:
    for table in views or []:
        name, _, path = table.partition("=")
        spark.read.parquet(str(Path(path).expanduser())).createOrReplaceTempView(name.strip())


def _check_master(args) -> None:
    """The master URL of a ``run``, ``sql`` or ``prepare`` command (its numbers are checked as they are parsed)."""
    if not _MASTER.fullmatch(args.master):
        raise UsageError(f"--master {args.master!r} is not a Spark master URL: use local[*], local[N], "
                         "local-cluster[E,C,M] or spark://host:port")


def _criterion(args):
    from ..shared import criteria

    try:
        return criteria.parse(args.until) if args.until else None
    except criteria.CriterionError as e:
        raise criteria.CriterionError(f"--until {e}") from None


def render_sql(snapshot, aggregates, accuracy: float, max_rows: int = 20):
    from rich.table import Table

    title = (f"batch {snapshot.batch}/{snapshot.batches} ({snapshot.fraction:.0%}), {snapshot.elapsed_s:.1f} s, "
             f"envelope accuracy {accuracy:.3f}"
             + (" - exact" if snapshot.final else f", {snapshot.confidence:.0%} intervals"))
    table = Table(title=title, caption="\n".join(snapshot.notes) or None)
    for column in snapshot.result.columns:
        table.add_column(str(column), justify="right" if column in aggregates else "left")
    for i, row in enumerate(snapshot.result.head(max_rows).itertuples(index=False, name=None)):
        table.add_row(*[_format(value, snapshot.ci.iat[i, snapshot.ci.columns.get_loc(c)]
                                if c in aggregates and c in snapshot.ci.columns else None)
                        for c, value in zip(snapshot.result.columns, row)])
    return table


def run_sql(args, criterion=None) -> int:
    """Run the plain query of a ``sql`` command (already :func:`check_sql`-ed) with a live table."""
    from rich.console import Console
    from rich.live import Live

    from ..shared import criteria
    from .accuracy import Envelope
    from .sqlquery import ExactQuery, QueryError, query, resume

    spark = _session(args)
    try:
        _register_views(spark, args.table)
        try:
            job = (resume(spark, Path(args.resume).expanduser()) if args.resume
                   else query(spark, args.query, args.batches, args.seed, confidence=args.confidence,
                              layouts=args.layouts))
        except QueryError as e:
            raise QueryError(f"{e} (on this command line: --table NAME=PATH registers a Parquet folder)") from None
        exact = isinstance(job, ExactQuery)
        envelope = None if exact else Envelope(job.spec, args.window)
        aggregates = [] if exact else job.spec.aggregates
        estimate = 0.0
        console = Console(width=None if sys.stdout.isatty() else 160)
        snapshots = []
        with Live(console=console, refresh_per_second=4) as live:
            for epoch, snapshot in enumerate(job, 1):
                snapshots.append(snapshot)
                # the exact answer is fully accurate, whatever the window saw (a resumed run sees few snapshots)
                previous, estimate = estimate, (1.0 if exact or snapshot.final else envelope.add(snapshot.result))
                live.update(render_sql(snapshot, aggregates, estimate))
                progress = criteria.Progress(snapshot.elapsed_s, epoch, estimate, previous, complete=snapshot.final)
                if criterion and criterion.status(progress) != criteria.RUNNING:
                    console.print(f"{criterion}: {criterion.status(progress)}")
                    break
        job.close()
        if args.checkpoint and exact:
            console.print(f"no checkpoint: {job.reason}, so it ran exactly in one step")
        elif args.checkpoint:
            console.print(f"checkpoint: {job.checkpoint(Path(args.checkpoint).expanduser(), {'tables': args.table})}")
        if args.plot and exact:
            console.print(f"no plot: {job.reason}, so there is one exact answer and nothing converging")
        elif args.plot:
            from .plot import convergence_plot

            console.print(f"plot: {convergence_plot(snapshots, aggregates, Path(args.plot).expanduser(), '--plot')}")
    finally:
        spark.stop()
    return 0


def _run_options(parser) -> None:
    """The options ``run`` and ``sql`` share."""
    from .spec import BATCHES, CONFIDENCE, SEED, WINDOW

    parser.add_argument("--batches", type=BATCHES.option("--batches"), default=20)
    parser.add_argument("--seed", type=SEED.option("--seed"), default=0, help="seed of the batch split and order")
    parser.add_argument("--confidence", type=CONFIDENCE.option("--confidence"), default=0.95)
    parser.add_argument("--window", type=WINDOW.option("--window"), default=3, help="envelope window (default 3)")
    parser.add_argument("--until", help="a completion criterion, e.g. 'UNTIL ACC >= 0.95 WITHIN 60 SECONDS'")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--checkpoint", help="save the state here when the run stops")
    parser.add_argument("--resume", help="continue from a checkpoint folder")


def build_parser() -> argparse.ArgumentParser:
    from .spec import BATCHES, SEED

    parser = Parser(prog="python -m spark_plugin.rotary", description=__doc__,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    sub.add_parser("list", help="the TPC-H queries with a progressive spec")
    r = sub.add_parser("run", help="run one query progressively")
    r.add_argument("query", nargs="?", help="TPC-H query number or a spec file")
    r.add_argument("--data", help="TPC-H Parquet folder (one sub-folder per table)")
    _run_options(r)
    r.add_argument("--log-level", default="FATAL", type=str.upper, choices=LOG_LEVELS,
                   help="Spark's log level once it runs (default FATAL: errors reach you as one line; WARN or "
                        "INFO to see Spark's own messages)")
    q = sub.add_parser("sql", help="run a plain aggregate query over your own tables progressively")
    q.add_argument("query", nargs="?", help="the SQL text; tables are catalog tables, --table views or "
                                            "parquet.`path` (left out with --resume)")
    q.add_argument("--table", action="append", metavar="NAME=PATH",
                   help="register a Parquet file or folder as temporary view NAME (repeatable)")
    q.add_argument("--layouts", help="folder of prepared batch layouts (see `prepare`; default "
                                     "~/.cache/sparkrm/rotary/layouts); a table not prepared is hashed into "
                                     "batches on the fly (slower)")
    q.add_argument("--plot", metavar="FILE.png", help="draw each aggregate's estimate and interval over time "
                                                      "against the exact answer into this image")
    _run_options(q)
    q.add_argument("--log-level", default="FATAL", type=str.upper, choices=LOG_LEVELS,
                   help="Spark's log level once it runs (default FATAL)")
    p = sub.add_parser("prepare", help="split tables into random batches once (resumable): a table by a key, or "
                                       "the fact tables of queries by the keys they need")
    p.add_argument("table", nargs="?", help="the table's Parquet file or folder (with --key)")
    p.add_argument("--key", help="column(s) hashed into a batch, comma-separated: a join key of your queries")
    p.add_argument("--query", action="append", metavar="SQL",
                   help="prepare this query's fact table by the key it batches by (repeatable; instead of TABLE)")
    p.add_argument("--table", action="append", dest="views", metavar="NAME=PATH",
                   help="with --query: register a Parquet file or folder as temporary view NAME (repeatable)")
    p.add_argument("--layouts", help="where layouts live (default ~/.cache/sparkrm/rotary/layouts)")
    p.add_argument("--batches", type=BATCHES.option("--batches"), default=20)
    p.add_argument("--seed", type=SEED.option("--seed"), default=0)
    p.add_argument("--master", default="local[*]")
    p.add_argument("--log-level", default="FATAL", type=str.upper, choices=LOG_LEVELS)
    return parser


def check_prepare(args) -> None:
    """Check a ``prepare`` command's arguments before Spark starts: a table with its key, or queries, and a
    layouts folder that is sparkrm's (or new) and writable."""
    from .layout_root import claim_root

    if args.query and (args.table or args.key):
        raise UsageError("prepare takes a TABLE with --key, or --query (its tables by --table NAME=PATH), not both")
    if args.query:
        _check_views(args.views)
    elif not args.table or not args.key:
        raise UsageError("prepare needs a TABLE and its --key (e.g. prepare /data/orders --key o_orderkey), or "
                         "--query SQL with --table NAME=PATH for the tables it reads")
    elif not Path(args.table).expanduser().exists():
        raise UsageError(f"prepare: {args.table} does not exist; give the table's Parquet file or folder")
    _check_master(args)
    claim_root(args.layouts, what="--layouts" if args.layouts else None)


def run_prepare(args) -> int:
    """Write (or finish writing) batch layouts with a progress bar: one table's, or those queries need."""
    from rich.progress import Progress

    from .layouts import prepare_for, prepare_table

    check_prepare(args)
    spark = _session(args)
    try:
        _register_views(spark, args.views)
        with Progress() as bar:
            tasks = {}

            def progress(table, key, done, total):
                name = f"batches of {table} by {','.join(key)}"
                if name not in tasks:  # one bar per layout (setdefault would add a bar at every call)
                    tasks[name] = bar.add_task(name, total=total)
                bar.update(tasks[name], completed=done)

            if args.query:
                layouts = prepare_for(spark, args.query, args.batches, args.seed, root=args.layouts,
                                      progress=progress)
            else:
                key = [k.strip() for k in args.key.split(",")]
                layouts = [prepare_table(spark, args.table, key, args.batches, args.seed, root=args.layouts,
                                         progress=lambda done, total: progress(args.table, key, done, total))]
        for layout in layouts:
            print(f"layout: {layout.folder}")
        if not layouts:
            print("no layout needed: every query is answered exactly or reads no file-based table")
    finally:
        spark.stop()
    return 0


def main(argv=None) -> int:
    from .spec import available

    args = build_parser().parse_args(argv)
    if args.command == "list":
        print(" ".join(f"Q{q}" for q in available()))
        return 0
    try:
        if args.command == "sql":
            return run_sql(args, check_sql(args))
        if args.command == "prepare":
            return run_prepare(args)
        return run(args, check(args))
    except (ValueError, OSError) as e:  # bad query, criterion, data, checkpoint or path: one line, no traceback
        return print_error(e)


if __name__ == "__main__":
    sys.exit(main())
