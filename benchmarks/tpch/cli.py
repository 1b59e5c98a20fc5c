"""``python -m benchmarks.tpch``: run TPC-H on an embedded Spark cluster, with and without sparkrm.

Examples
--------
Every query at SF 1, vanilla Spark against each sparkrm feature that applies to TPC-H (Riffle's merged
shuffle files, Rotary's progressive answers), one first run of each, ending with what each buys::

    python -m benchmarks.tpch --sf 1

Riffle against vanilla, three timed runs after a warm-up, selected queries::

    python -m benchmarks.tpch --sf 1 --queries 3,5,9-10 --modes vanilla,riffle --repeat 3 --out runs/riffle

On the emulated multi-host cluster (``python -m benchmarks.cluster up``)::

    python -m benchmarks.tpch --sf 1 --master "$(python -m benchmarks.cluster url)"
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from benchmarks.common import run_metadata
from spark_plugin.arguments import Parser
from spark_plugin.errors import NotOursError, print_error
from spark_plugin.ownership import FolderKind

from .data import DataError, default_root
from .modes import DEFAULT_MODES, MODES, ModeError, parse_modes
from .oracle import ResultMismatch
from .queries import QuerySelectionError, parse_selection
from .report import write_outputs
from .runner import RunConfig, WorkerFailed, run

OUTPUTS = ("results.json", "report.md", "report.png")
#: ``--out``: replaced only when an earlier run of this harness wrote it (spark_plugin.ownership).
RESULTS_FOLDER = FolderKind("TPC-H results folder", OUTPUTS)


class UsageError(ValueError):
    """A command-line value is unusable."""


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="python -m benchmarks.tpch", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sf", type=float, default=1.0, help="scale factor, > 0 (default 1)")
    p.add_argument("--queries", default="1-22", help="e.g. 1-22, 1,3,5-7 (default 1-22)")
    p.add_argument("--modes", default=",".join(DEFAULT_MODES),
                   help=f"comma-separated, of: {', '.join(MODES)} (default {','.join(DEFAULT_MODES)})")
    p.add_argument("--repeat", type=int, default=1, help="timed runs per query and mode (default 1)")
    p.add_argument("--warmups", type=int, default=None,
                   help="untimed runs before them (default 0 with --repeat 1: first runs, as a new user's; else 1)")
    p.add_argument("--executors", type=int, default=2, help="executor JVMs of the embedded cluster (default 2)")
    p.add_argument("--executor-cores", type=int, default=1, help="cores per executor (default 1)")
    p.add_argument("--executor-memory", type=int, default=2048, metavar="MIB", help="per executor (default 2048)")
    p.add_argument("--master", default=None, help="Spark master instead of the embedded local-cluster")
    p.add_argument("--shuffle-partitions", type=int, default=16, help="spark.sql.shuffle.partitions (default 16)")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark setting")
    p.add_argument("--data", type=Path, default=None, help=f"data root (default {default_root()})")
    p.add_argument("--parts", type=int, default=4, help="Parquet files per table (default 4)")
    p.add_argument("--out", type=Path, default=Path("tpch-results"), help="output folder (default ./tpch-results)")
    p.add_argument("--no-validate", dest="validate", action="store_false", help="skip the DuckDB check")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    p.add_argument("--debug", action="store_true", help="show the Python traceback of an unexpected error")
    return p


def config_from(args) -> RunConfig:
    """Check every argument and build the run configuration.

    Raises
    ------
    UsageError, QuerySelectionError, ModeError
    """
    if not args.sf > 0:
        raise UsageError(f"--sf must be > 0, got {args.sf:g}.")
    for name in ("repeat", "executors", "executor_cores", "parts", "shuffle_partitions"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}.")
    warmups = (0 if args.repeat == 1 else 1) if args.warmups is None else args.warmups
    if warmups < 0:
        raise UsageError(f"--warmups must be >= 0, got {warmups}.")
    if args.executor_memory < 512:
        raise UsageError(f"--executor-memory is in MiB and must be >= 512, got {args.executor_memory}.")
    conf = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key.startswith("spark."):
            raise UsageError(f"--conf takes spark.KEY=VALUE, got {item!r}.")
        conf[key] = value
    return RunConfig(sf=args.sf, parts=args.parts, queries=parse_selection(args.queries),
                     modes=parse_modes(args.modes), executors=args.executors,
                     executor_cores=args.executor_cores, executor_memory_mb=args.executor_memory,
                     master=args.master, repeat=args.repeat, warmups=warmups,
                     shuffle_partitions=args.shuffle_partitions,
                     validate=args.validate, data_root=args.data or default_root(), spark_conf=conf)


def prepare_out_dir(out: Path) -> None:
    """Claim ``out`` (new, empty or an earlier run's), check it is writable, and remove an earlier run's outputs.

    Removing them first means a run that fails leaves no results that could be taken for its own. A folder
    holding anything else (the user's own ``report.md``, say) is refused, so nothing of theirs is replaced.
    """
    try:
        RESULTS_FOLDER.claim(out, what="--out")
        probe = out / f".write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise UsageError(f"Cannot write to the output folder {out}: {e.strerror or e}. Choose another --out.") from e
    for name in OUTPUTS:
        (out / name).unlink(missing_ok=True)


def main(argv=None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args = build_parser().parse_args(argv)
    try:
        cfg = config_from(args)
        prepare_out_dir(args.out)
        results = run(cfg, _progress_bar(cfg) if args.progress else None)
    except (UsageError, QuerySelectionError, ModeError, DataError, NotOursError) as e:
        return print_error(e)
    except (ResultMismatch, WorkerFailed) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # anything else is our bug or the machine's: one line, the traceback on request
        if args.debug:
            raise
        print(f"error: the harness stopped unexpectedly: {type(e).__name__}: {e}. Run again with --debug for the "
              "traceback, and report it.", file=sys.stderr)
        return 1
    meta = run_metadata({"argv": sys.argv[1:] if argv is None else list(argv)})
    paths = write_outputs(args.out, results, meta)
    from .report import headline, summarize

    for mode, s in summarize(results).items():
        print(f"{mode}: sum of medians {s['total_median_s']:.1f} s, harness overhead "
              f"{100 * s['harness_overhead']:.2f}%")
    print(f"wrote {paths['json']}, {paths['md']}, {paths['png']}\n")
    if len(cfg.modes) > 1:
        print("\n".join(headline(results)))
    return 0


def _progress_bar(cfg: RunConfig):
    from tqdm import tqdm

    bar = tqdm(total=len(cfg.queries) * len(cfg.modes) * (cfg.repeat + cfg.warmups), unit="run", file=sys.stderr)

    def advance(query, mode, label):
        if bar.n or bar.desc:
            bar.update(1)
        bar.set_description(f"Q{query:02d} {mode} {label}")

    return advance
