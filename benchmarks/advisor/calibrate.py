"""``python -m benchmarks.advisor.calibrate RESULT_JSON...``: the interval rule's coverage over a grid of its constants.

Each recorded job's runs are held out one at a time and predicted, with an interval, by the advisor fitted on the
others (:func:`~benchmarks.advisor.analysis.interval_coverage`); printed per setting of
:data:`~spark_plugin.advisor.intervals.FLOOR`, ``SPREAD`` and ``WIDEN``: the share of held-out runs covered
(overall, between the measured counts only, per result file) and the median width (high / low - 1). The
constants in :mod:`spark_plugin.advisor.intervals` were chosen this way on the results named there.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
from pathlib import Path

import spark_plugin.advisor.intervals as rule

from .analysis import interval_coverage, recorded_run

GRID = {"FLOOR": (0.05, 0.10, 0.15, 0.20), "SPREAD": (1.0, 1.5, 2.0), "WIDEN": (0.5, 1.0, 2.0)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.advisor.calibrate", description=__doc__)
    parser.add_argument("results", nargs="+", type=Path, help="advisor benchmark results (*.json)")
    args = parser.parse_args(argv)
    jobs = [(path.name, sorted((recorded_run(r, d["meta"]["conf"]) for r in q["runs"]), key=lambda r: r.slots))
            for path in args.results for d in [json.loads(path.read_text())] for q in d["queries"].values()]
    for values in itertools.product(*GRID.values()):
        for name, value in zip(GRID, values):
            setattr(rule, name, value)
        held = [(name, iv) for name, runs in jobs for iv in interval_coverage(runs)]
        inside = [iv for _, iv in held if not iv["extrapolated"]]
        per_file = {p.name: _share([iv for name, iv in held if name == p.name]) for p in args.results}
        print(" ".join(f"{n}={v}" for n, v in zip(GRID, values)),
              f"covered {_share([iv for _, iv in held]):.3f} (between the counts {_share(inside):.3f})",
              f"width {statistics.median(iv['high_s'] / iv['low_s'] - 1 for _, iv in held):.2f}",
              " ".join(f"{k} {v:.2f}" for k, v in per_file.items()))
    return 0


def _share(intervals: list[dict]) -> float:
    return sum(iv["covered"] for iv in intervals) / max(1, len(intervals))


if __name__ == "__main__":
    raise SystemExit(main())
