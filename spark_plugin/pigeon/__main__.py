"""``python -m spark_plugin.pigeon pools --cores N``: Pigeon's two pools as a ``fairscheduler.xml``."""

from __future__ import annotations

import argparse
import sys

from ..keys import KEYS
from . import ShortJobPools


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_plugin.pigeon", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    pools = sub.add_parser("pools", help="print the allocation file for spark.scheduler.allocation.file")
    pools.add_argument("--cores", type=int, required=True, help="task slots of the application")
    pools.add_argument("--weight", type=int, default=KEYS.default("spark.pigeon.short.weight"),
                       help="the short pool's weight (default %(default)s)")
    pools.add_argument("--min-share", type=float, default=KEYS.default("spark.pigeon.short.minShare"),
                       help="share of the cores the short pool gets first (default %(default)s)")
    args = parser.parse_args(argv)
    try:
        layout = ShortJobPools(args.cores, weight=args.weight, min_share=args.min_share)
    except ValueError as e:
        parser.error(str(e))
    sys.stdout.write(layout.allocation_file())
    return 0


if __name__ == "__main__":
    sys.exit(main())
