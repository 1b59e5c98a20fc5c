"""``python -m benchmarks.shared_driver``: short queries beside long jobs in one driver (see :mod:`.mixed`)."""

import argparse
import sys
from pathlib import Path

from benchmarks.common import add_master_option

from . import mixed


def _arms(text: str) -> list[str]:
    arms = [a.strip() for a in text.split(",")]
    unknown = [a for a in arms if a not in mixed.ARMS]
    if unknown or len(set(arms)) != len(arms):
        raise argparse.ArgumentTypeError(f"expected distinct arms among {', '.join(mixed.ARMS)}; got {text!r}")
    return arms


def main(argv=None) -> int:
    from benchmarks.tpch.data import default_root

    p = argparse.ArgumentParser(prog="python -m benchmarks.shared_driver", description=mixed.__doc__.split("\n")[0])
    p.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    p.add_argument("--parts", type=int, default=4, help="files per table (default 4)")
    p.add_argument("--data", type=Path, default=default_root(), help="where TPC-H data is kept (generated if missing)")
    p.add_argument("--seeds", type=lambda s: [int(x) for x in s.split(",")], default=[0, 1, 2])
    p.add_argument("--gaps", type=lambda s: [float(x) for x in s.split(",")], default=[4.0, 2.0],
                   help="mean seconds between short queries, one run each (default 4,2)")
    p.add_argument("--duration", type=float, default=45.0, help="seconds of arrivals per rate (default 45)")
    p.add_argument("--arms", type=_arms, default=list(mixed.ARMS), help=f"default {','.join(mixed.ARMS)}")
    p.add_argument("--short-max", type=float, default=10.0,
                   help="spark.pigeon.short.maxLength in seconds: the longest predicted length routed to the short "
                        "pool (default 10, the key's default; TPC-H SF 1 on two cores: about 3)")
    p.add_argument("--executors", type=int, default=2, help="executor JVMs, one core each (default 2)")
    p.add_argument("--out", type=Path, default=None, help="output folder (default benchmarks/results/shared_driver)")
    add_master_option(p)
    mixed.run(p.parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
