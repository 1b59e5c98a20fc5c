"""``python -m spark_plugin.pigeon pools --cores N``: Pigeon's two pools as a ``fairscheduler.xml``.

``--weight`` and ``--min-share`` are checked by the rules of ``spark.pigeon.short.weight`` and
``spark.pigeon.short.minShare``; a bad option is one line and exit status 2.
"""

from __future__ import annotations

import sys

from ..arguments import Parser, key_option, whole_number_option
from ..keys import KEYS
from . import ShortJobPools


def main(argv=None) -> int:
    parser = Parser(prog="python -m spark_plugin.pigeon", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    pools = sub.add_parser("pools", help="print the allocation file for spark.scheduler.allocation.file")
    pools.add_argument("--cores", type=whole_number_option("--cores", low=1, high=ShortJobPools.MAX_CORES),
                       required=True, help="task slots of the application")
    pools.add_argument("--weight", type=key_option("spark.pigeon.short.weight", "--weight"),
                       default=KEYS.default("spark.pigeon.short.weight"),
                       help="the short pool's weight (default %(default)s)")
    pools.add_argument("--min-share", type=key_option("spark.pigeon.short.minShare", "--min-share"),
                       default=KEYS.default("spark.pigeon.short.minShare"),
                       help="share of the cores the short pool gets first (default %(default)s)")
    args = parser.parse_args(argv)
    layout = ShortJobPools(args.cores, weight=args.weight, min_share=args.min_share)
    sys.stdout.write(layout.allocation_file())
    return 0


if __name__ == "__main__":
    sys.exit(main())
