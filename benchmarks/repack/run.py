"""Repack benchmarks: ``python -m benchmarks.repack {impv,hyperband,report}``.

* ``impv``: T_s(Seq), T_s(Pack) and IMPV = (T_s(Seq) - T_s(Pack)) / T_s(Seq) against the number
  of packed models (thesis Fig. 2.4a), for MLP-3 and a small CNN; peak GPU memory when there is a
  GPU; SwOH(2) (Table 2.1).
* ``jax-impv``: the ``impv`` measurement with the packed step written in JAX, for GPU machines
  where TensorFlow cannot be installed (see ``gpu_jax.py``).
* ``hyperband``: pack-aware Hyperband (knn, random, batch-size packing) against plain Hyperband
  on the same search space (thesis Table 2.3) and seed: wall time ratio and best accuracy
  (thesis Table 2.4). Data: scikit-learn's bundled digits.

Each run writes ``benchmarks/results/repack/<name>-<date>-<sha>.json`` plus a Markdown report
and a PNG plot rendered from the JSON alone (``report`` re-renders them).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.common import RESULTS_DIR, run_metadata, spread, write_json  # noqa: E402

from .report import render  # noqa: E402

OUT_DIR = RESULTS_DIR / "repack"


def _ints(text: str) -> list:
    return [int(v) for v in text.split(",") if v]


def _words(text: str) -> list:
    return [v for v in text.split(",") if v]


def metadata(args) -> dict:
    import keras
    import tensorflow as tf

    meta = run_metadata({k: v for k, v in vars(args).items() if k != "func"})
    gpus = tf.config.list_logical_devices("GPU")
    details = tf.config.experimental.get_device_details(tf.config.list_physical_devices("GPU")[0]) if gpus else {}
    meta.update(keras=keras.__version__, tensorflow=tf.__version__,
                device=details.get("device_name", "GPU") if gpus else f"CPU ({os.cpu_count()} cores)")
    return meta


def output(meta: dict, name: str, out_dir) -> Path:
    folder = Path(out_dir) if out_dir else OUT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}-{meta['date'][:10]}-{meta['git_sha']}.json"


def impv(args) -> Path:
    from tf_packing.data import make_classification
    from tf_packing.profiler import profile, switching_overhead

    from .models import builder

    shapes = {"mlp": (28, 28, 1), "cnn": (32, 32, 3)}
    meta = metadata(args)
    rows, swoh = [], {}
    for kind in args.models:
        (x, y), _ = make_classification(args.examples, shape=shapes[kind], seed=args.seed)
        build = builder(kind, shapes[kind], args.seed)
        for n in args.counts:
            result = profile(build, n, x, y, batch_sizes=args.batch_size, steps=args.steps, repeats=args.repeats,
                             keras_baseline=args.keras).to_dict()
            seq_runs = [sum(r) for r in zip(*result["raw"]["models"])]
            result["impv_spread"] = {v: spread([(s - p) / s for s, p in zip(seq_runs, result["raw"][v])])
                                     for v in result["t_pack"]}
            rows.append({"model": kind, **result})
            print(f"{kind} n={n}: T_s(Seq) {result['t_seq'] * 1e3:.2f} ms, " + ", ".join(
                f"{v} {t * 1e3:.2f} ms (IMPV {result['impv'][v]:+.1%})" for v, t in result["t_pack"].items()),
                file=sys.stderr)
        if args.swoh:
            swoh[kind] = switching_overhead(build, args.swoh, x, y, batch_size=args.batch_size)
    path = output(meta, args.name or "impv", args.out)
    write_json(path, {"meta": meta, "kind": "impv", "results": rows, "swoh": swoh})
    render(path)
    return path


def hyperband(args) -> Path:
    import time

    from tf_packing import KillRule, Tuner, load_digits
    from tf_packing.hyperband import TABLE_2_3

    from .models import tuner_build_fn

    (x, y), (xv, yv) = load_digits(seed=args.seed)
    meta = metadata(args)
    runs = {v: [] for v in args.variants}
    for rep in range(args.repeats):
        order = args.variants[rep % len(args.variants):] + args.variants[:rep % len(args.variants)]
        for variant in order:  # rotate the order every repeat: no variant always runs first
            packing, _, kill = variant.partition("+")
            rule = KillRule(args.kill_threshold, args.kill_boundary) if kill == "kill" else None
            tuner = Tuner(tuner_build_fn((64,)), TABLE_2_3, max_epochs=args.max_epochs, factor=args.factor,
                          packing=packing, max_group=args.max_group, group_size=args.group_size,
                          distance_threshold=args.threshold, memory_capacity=args.capacity, seed=args.seed,
                          early_kill=rule, progress=not args.quiet)
            start = time.perf_counter()
            tuner.search(x, y, validation_data=(xv, yv))
            runs[variant].append({"wall_s": time.perf_counter() - start, "best_score": tuner.best_score_,
                                  "best_config": tuner.best_config_, "groups": tuner.groups_,
                                  "oom_splits": tuner.oom_splits_, "top": tuner.results()[:5]})
            print(f"repeat {rep} {variant}: {runs[variant][-1]['wall_s']:.1f} s, best {tuner.best_score_:.4f}",
                  file=sys.stderr)
    base = args.variants[0]
    ratios = {v: spread([b["wall_s"] / r["wall_s"] for b, r in zip(runs[base], runs[v])]) for v in runs}
    path = output(meta, args.name or "hyperband", args.out)
    write_json(path, {"meta": meta, "kind": "hyperband", "baseline": base, "runs": runs, "speedup": ratios,
                      "wall_s": {v: spread(r["wall_s"] for r in rs) for v, rs in runs.items()},
                      "best_score": {v: spread(r["best_score"] for r in rs) for v, rs in runs.items()}})
    render(path)
    return path


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.repack", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--out", help="folder for the JSON, Markdown and PNG (default benchmarks/results/repack)")
    common.add_argument("--name", help="file name prefix (default: the subcommand)")
    common.add_argument("--seed", type=int, default=0, help="seed of data, weights and sampling (default 0)")
    common.add_argument("--repeats", type=int, default=5,
                        help="runs per figure; medians are reported (default 5; hyperband 2)")

    i = sub.add_parser("impv", parents=[common], help="IMPV against the number of packed models")
    i.add_argument("--models", type=_words, default=["mlp", "cnn"], help="comma list of mlp,cnn (default both)")
    i.add_argument("--counts", type=_ints, default=[1, 2, 4, 8, 16], help="packed model counts (default 1,2,4,8,16)")
    i.add_argument("--batch-size", type=int, default=64, help="batch size of every model (default 64)")
    i.add_argument("--steps", type=int, default=20, help="timed steps per run after a dropped warm-up (default 20)")
    i.add_argument("--examples", type=int, default=4096, help="generated training rows (default 4096)")
    i.add_argument("--keras", action="store_true",
                   help="also time each model trained alone by Keras's own model.fit (a second baseline)")
    i.add_argument("--swoh", type=int, default=2, help="models in the SwOH(n) measurement; 0 skips it (default 2)")
    i.set_defaults(func=impv)

    h = sub.add_parser("hyperband", parents=[common], help="pack-aware vs plain Hyperband on digits")
    h.add_argument("--variants", type=_words, default=["none", "batch_size", "random", "knn"],
                   help="packing strategies (none, batch_size, random, knn), each optionally with '+kill' for the "
                        "HyperDrive early kill; the first is the baseline (default none,batch_size,random,knn)")
    h.add_argument("--max-epochs", type=int, default=9, help="Hyperband R (default 9; the thesis uses 81)")
    h.add_argument("--factor", type=int, default=3, help="Hyperband eta (default 3)")
    h.add_argument("--max-group", type=int, default=8, help="most trials per pack (default 8)")
    h.add_argument("--group-size", type=int, default=4, help="random packing's group size (default 4)")
    h.add_argument("--threshold", type=int, default=None, help="kNN distance threshold (default none)")
    h.add_argument("--capacity", type=float, default=None, help="device bytes per pack (default unlimited)")
    h.add_argument("--kill-threshold", type=float, default=0.3,
                   help="HyperDrive early kill for variants named '<packing>+kill': validation accuracy a trial "
                        "must reach (default 0.3; chance is 0.1)")
    h.add_argument("--kill-boundary", type=int, default=1,
                   help="epochs before the kill rule applies (default 1)")
    h.add_argument("--quiet", action="store_true", help="no progress bars")
    h.set_defaults(func=hyperband, repeats=2)

    j = sub.add_parser("jax-impv", parents=[common],
                       help="IMPV on a GPU machine without TensorFlow: the packed step in JAX (gpu_jax.py)")
    j.add_argument("--models", type=_words, default=["mlp", "cnn"], help="comma list of mlp,cnn (default both)")
    j.add_argument("--counts", type=_ints, default=[1, 2, 4, 8, 16, 32, 64],
                   help="packed model counts (default 1,2,4,8,16,32,64)")
    j.add_argument("--variants", type=_words, default=["packed", "fused"],
                   help="packed (one jitted step over all members), fused (vmap over stacked members)")
    j.add_argument("--batch-size", type=int, default=64, help="batch size of every model (default 64)")
    j.add_argument("--steps", type=int, default=50, help="timed steps per run after a dropped warm-up (default 50)")
    j.add_argument("--examples", type=int, default=8192, help="generated training rows (default 8192)")
    j.add_argument("--max-unrolled", type=int, default=32,
                   help="largest pack for the unrolled 'packed' variant (compile time grows with it; default 32)")
    j.set_defaults(func=lambda a: __import__("benchmarks.repack.gpu_jax", fromlist=["jax_impv"]).jax_impv(a))

    r = sub.add_parser("report", help="re-render Markdown and PNG from a result JSON")
    r.add_argument("json", type=Path, help="a result JSON written by impv or hyperband")
    r.set_defaults(func=lambda a: render(a.json))
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    path = args.func(args)
    print(path)
    return 0
