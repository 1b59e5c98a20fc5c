"""Command line: ``python -m spark_plugin.wrangler {train,choose,evaluate,export}`` on recorded telemetry files.

``train`` labels the tasks of one or more telemetry files (written under
``spark.sparkrm.telemetry.dir`` with the ``wrangler`` feature on, so they hold
``node`` samples), fits a :class:`StragglerPredictor` and saves it; point
``spark.wrangler.model.path`` at the result: ``--out model.json`` is scored by the
driver JVM (``spark-submit --conf`` alone holds), ``--out model.joblib`` by the Python
loop. ``export`` turns a joblib model into the JSON one. ``evaluate`` scores a saved model on
another file (held-out tasks) and prints TPR, FPR and the rest as JSON. ``choose``
learns the confidence threshold p on a validation file (spec §5: per-node ranges,
median of the majority's) and prints it with the ``--conf`` that applies it.

Options that set what a key sets (``--beta``, ``--scope``, ``--confidence``, ``--min-node-tasks``) are
checked by that key's rule; ``--out`` overwrites only a model sparkrm wrote, and is checked before any
training; a model is scored on the counters of its training run, matched by name.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..arguments import Parser, key_option
from ..errors import SparkrmError, print_error
from ..keys import KEYS
from ..telemetry_reader import read_telemetry
from .dataset import build_dataset, concat
from .metrics import choose_confidence, evaluate
from .predictor import MODEL_FILE, StragglerPredictor


def load_rows(paths, *, beta: float, scope: str, workload: str):
    """The labelled rows of telemetry files, in launch order.

    A task's sample may be at most two sampling intervals old (the interval is read from the file).
    """
    datasets = []
    for path in paths:
        tables = read_telemetry(path)
        if "node" not in tables or not tables["node"].num_rows:
            raise SparkrmError(f"{path} holds no node samples. Record it with the wrangler feature on "
                               f"(features=['wrangler'] or spark.wrangler.enabled=true).")
        nodes = tables["node"].to_pandas()
        datasets.append(build_dataset(tables["task"].to_pandas(), nodes, beta=beta, scope=scope, workload=workload,
                                      max_age_ms=int(2 * nodes["intervalMs"].median())))
    return concat(datasets)


def main(argv=None) -> int:
    parser = Parser(prog="python -m spark_plugin.wrangler", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, helptext in (("train", "train a model on telemetry files"),
                           ("choose", "learn the confidence threshold p on validation telemetry"),
                           ("evaluate", "score a saved model on telemetry files")):
        cmd = sub.add_parser(name, help=helptext)
        if name != "train":
            cmd.add_argument("model", type=Path, help="a model written by `train`")
        cmd.add_argument("telemetry", type=Path, nargs="+", help="<appId>.telemetry.jsonl files")
        cmd.add_argument("--beta", type=key_option("spark.wrangler.beta", "--beta"),
                         default=KEYS.default("spark.wrangler.beta"),
                         help="straggler threshold (default: spark.wrangler.beta's, %(default)s)")
        cmd.add_argument("--scope", type=key_option("spark.wrangler.scope", "--scope"),
                         default=KEYS.default("spark.wrangler.scope"),
                         help="peers a task's median is over: stage or job (default %(default)s)")
        cmd.add_argument("--workload", type=key_option("spark.wrangler.workload", "--workload"), default="default",
                         help="workload tag of these tasks (default 'default')")
    train = sub.choices["train"]
    train.add_argument("--out", type=Path, required=True, help="where to write the model (joblib)")
    train.add_argument("--min-node-tasks", type=key_option("spark.wrangler.train.minNodeTasks", "--min-node-tasks"),
                       default=KEYS.default("spark.wrangler.train.minNodeTasks"),
                       help="rows a node needs for its own model (default %(default)s)")
    sub.choices["evaluate"].add_argument("--confidence", type=key_option("spark.wrangler.confidence", "--confidence"),
                                         default=KEYS.default("spark.wrangler.confidence"),
                                         help="threshold p (default: spark.wrangler.confidence's, %(default)s)")
    export = sub.add_parser("export", help="write a joblib model as JSON for the driver JVM")
    export.add_argument("model", type=Path, help="a model written by `train --out model.joblib`")
    export.add_argument("--out", type=Path, required=True, help="the JSON model to write (ends in .json)")
    opts = parser.parse_args(argv)
    try:
        if opts.command == "export" and opts.out.suffix != ".json":
            raise ValueError(f"--out {opts.out} must end in .json (the driver JVM reads JSON models)")
        if opts.command in ("train", "export"):
            MODEL_FILE.check_writable(opts.out, what="--out")
        model = None if opts.command == "train" else StragglerPredictor.load(opts.model, what="model")
        if opts.command == "export":
            print(json.dumps({"model": str(model.save(opts.out, what="--out"))}))
            return 0
        rows = load_rows(opts.telemetry, beta=opts.beta, scope=opts.scope, workload=opts.workload)
        if opts.command == "train":
            reason = StragglerPredictor.untrainable_reason(rows)
            if reason is not None:
                raise ValueError(f"cannot train on {', '.join(map(str, opts.telemetry))}: {reason} Record a longer "
                                 f"run, or lower --beta.")
            model = StragglerPredictor(min_node_tasks=opts.min_node_tasks).fit(rows)
            model.save(opts.out, what="--out")
            auc = model.calibration_auc(rows)
            print(json.dumps({"model": str(opts.out), "rows": len(rows), "stragglers": int(rows.y.sum()),
                              "calibration_auc": auc, "node_models": sorted(model.node_models_),
                              "fit_seconds": model.fit_seconds_}, indent=1))
            if not auc > StragglerPredictor.MIN_NODE_AUC:
                print(f"warning: the model ranks its held-out third no better than chance (ROC AUC {auc:.2f}); "
                      f"its holds will mostly be refused by the feedback guard. Record a longer run with slow "
                      f"executors in it, or check `evaluate` on another recording before using it.", file=sys.stderr)
        else:
            rows = rows.select(model.features_, model=f"model {opts.model}")
            if opts.command == "choose":
                choice = choose_confidence(model, rows)
                print(json.dumps({**choice, "conf": f"spark.wrangler.confidence={choice['confidence']:g}"},
                                 indent=1))
            else:
                print(json.dumps(evaluate(model, rows, confidence=opts.confidence), indent=1))
    except (SparkrmError, ValueError, OSError) as e:
        return print_error(e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
