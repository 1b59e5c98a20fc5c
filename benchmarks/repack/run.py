"""Repack benchmarks: ``python -m benchmarks.repack {impv,hyperband,report}``.

* ``impv``: T_s(Seq), T_s(Pack) and IMPV = (T_s(Seq) - T_s(Pack)) / T_s(Seq) against the number
  of packed models (thesis Fig. 2.4a), for MLP-3 and a small CNN; peak GPU memory when there is a
  GPU; SwOH(2) (Table 2.1).
* ``jax-impv``: the ``impv`` measurement with the packed step written in JAX, for GPU machines
  where TensorFlow cannot be installed (see ``gpu_jax.py``).
* ``hyperband``: pack-aware Hyperband (knn, random, batch-size packing) against plain Hyperband
  on the same search space (thesis Table 2.3) and seed: wall time ratio and best accuracy
  (thesis Table 2.4). Data: scikit-learn's bundled digits.
* ``hyperdrive``: time to a target accuracy of plain pack-aware Hyperband, a fixed kill threshold and
  HyperDrive's POP early termination, several seeds (see ``time_to_target.py``).
* ``executors``: ``Tuner(spark=...)`` on 1 and 2 one-core executors, and the tuner in one process: wall time
  ratios and whether every arm found the same trials and scores (see ``executors.py``).
* ``keras-tuner``: Keras Tuner's Hyperband against sparkrm's pack-aware ``Tuner``, one Keras-Tuner-style
  ``build_fn(hp)`` and the same digits split for both, per seed: wall time, best validation accuracy and
  the time each takes to first reach the accuracy both reach (see ``keras_tuner.py``).

Each run writes ``benchmarks/results/repack/<name>-<date>-<sha>.json`` plus a Markdown report
and a PNG plot rendered from the JSON alone (``report`` re-renders them).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.common import RESULTS_DIR, add_master_option, interval, run_metadata, spread, write_json  # noqa: E402

from .problems import PROBLEMS  # noqa: E402
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
    from tf_packing.repack.data import make_classification
    from tf_packing.repack.profiler import profile, switching_overhead

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
    from tf_packing.tuner.hyperband import TABLE_2_3

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


def time_to(trace, level) -> float | None:
    """Seconds until ``trace`` (``[[seconds, score], ...]``) first scores ``level`` or more; None if never."""
    return next((t for t, score in trace if score >= level - 1e-9), None)


def summary(values) -> dict | None:
    """Spread and 95% interval of the values over seeds, leaving out the seeds without one (None)."""
    values = [v for v in values if v is not None]
    return {**spread(values), **interval(values)} if values else None


def versus_keras_tuner(args) -> Path:
    from .keras_tuner import MISSING, TUNERS, available, run_seed

    unknown = [t for t in args.tuners if t not in TUNERS]
    if unknown or not args.tuners:
        sys.exit(f"keras-tuner: --tuners takes a comma list of {','.join(TUNERS)}, not {','.join(unknown)!r}")
    if args.seed is not None or args.repeats is not None:
        sys.exit("keras-tuner: give the seeds with --seeds (one run per tuner and seed); --seed and --repeats "
                 "do not apply")
    if "keras-tuner" in args.tuners and not available():
        sys.exit(MISSING)
    meta = metadata(args)
    meta["keras_tuner"] = importlib.metadata.version("keras-tuner") if "keras-tuner" in args.tuners else None
    seeds = []
    for index, seed in enumerate(args.seeds):
        result = run_seed(seed, index, args.tuners, max_epochs=args.max_epochs, factor=args.factor, quiet=args.quiet,
                          keep_best_epoch=args.keep_best_epoch, problem=args.problem)
        runs = result["runs"]
        if "sparkrm-fresh" in runs and "sparkrm" in runs:  # item 3's before and after: traces kept or not
            result["reuse_speedup"] = runs["sparkrm-fresh"]["wall_s"] / runs["sparkrm"]["wall_s"]
        if "keras-tuner" in runs and "sparkrm" in runs:
            kt, ours = runs["keras-tuner"], runs["sparkrm"]
            level = min(kt["best_score"], ours["best_score"])
            t_kt, t_ours = time_to(kt["trace"], level), time_to(ours["trace"], level)  # None: never in the trace
            result.update(level=level, time_to_level={"keras-tuner": t_kt, "sparkrm": t_ours},
                          speedup_to_level=t_kt / t_ours if t_kt and t_ours else None,
                          wall_ratio=kt["wall_s"] / ours["wall_s"])
            after = ["never" if t is None else f"after {t:.1f} s" for t in (t_kt, t_ours)]
            print(f"seed {seed}: both reach {level:.4f}: keras-tuner {after[0]}, sparkrm {after[1]}; whole runs "
                  f"{result['wall_ratio']:.2f}x", file=sys.stderr)
        seeds.append(result)

    path = output(meta, args.name or "keras-tuner", args.out)
    write_json(path, {"meta": meta, "kind": "keras-tuner", "tuners": args.tuners, "seeds": seeds, "summary": {
        "speedup_to_level": summary(s.get("speedup_to_level") for s in seeds),
        "wall_ratio": summary(s.get("wall_ratio") for s in seeds),
        "reuse_speedup": summary(s.get("reuse_speedup") for s in seeds),
        "wall_s": {t: summary(s["runs"][t]["wall_s"] for s in seeds) for t in args.tuners},
        "best_score": {t: summary(s["runs"][t]["best_score"] for s in seeds) for t in args.tuners}}})
    render(path)
    return path


def hyperdrive(args) -> Path:
    from .time_to_target import VARIANTS, run

    unknown = [v for v in args.variants if v not in VARIANTS]
    if unknown:
        sys.exit(f"hyperdrive: --variants takes a comma list of {','.join(VARIANTS)}, not {','.join(unknown)!r}")
    if args.seed is not None or args.repeats is not None:
        sys.exit("hyperdrive: give the seeds with --seeds (one run per variant and seed); --seed and --repeats "
                 "do not apply")
    meta = metadata(args)
    runs = {v: [] for v in args.variants}
    for index, seed in enumerate(args.seeds):
        order = args.variants[index % len(args.variants):] + args.variants[:index % len(args.variants)]
        for variant in order:  # rotate the order every seed: no variant always runs first
            runs[variant].append(run(variant, seed, target=args.target, max_epochs=args.max_epochs,
                                     factor=args.factor, kill_threshold=args.kill_threshold, boundary=args.boundary,
                                     quiet=args.quiet))
    base = args.variants[0]

    def time(r):  # a search that never reached the target counts its whole time (a lower bound)
        return r["time_to_target_s"] if r["reached"] else r["wall_s"]

    speedup = {v: [time(b) / time(r) for b, r in zip(runs[base], runs[v])] for v in runs}
    summary = {v: {"speedup": {**spread(speedup[v]), **interval(speedup[v])},
                   "time_s": spread(time(r) for r in runs[v]), "reached": sum(r["reached"] for r in runs[v]),
                   "trial_epochs": spread(r["trial_epochs"] for r in runs[v])} for v in runs}
    path = output(meta, args.name or "hyperdrive", args.out)
    write_json(path, {"meta": meta, "kind": "hyperdrive", "baseline": base, "target": args.target, "runs": runs,
                      "speedup": speedup, "summary": summary})
    render(path)
    return path


def on_executors(args) -> Path:
    from .executors import parse_arm, run_arm, same_search
    from .keras_tuner import MISSING, available

    try:
        kinds = {parse_arm(arm)[0] for arm in args.arms}
    except ValueError as e:
        sys.exit(f"executors: {e}")
    if len(set(args.arms)) < len(args.arms):
        sys.exit(f"executors: arms {args.arms} name one arm twice; run it again as ARM@label, e.g. spark-2@again")
    if "keras-tuner" in kinds and not available():
        sys.exit(MISSING)
    if args.seed is not None or args.repeats is not None:
        sys.exit("executors: give the seeds with --seeds (one run per arm and seed); --seed and --repeats do not apply")
    meta = metadata(args)
    seeds = []
    for index, seed in enumerate(args.seeds):
        order = args.arms[index % len(args.arms):] + args.arms[:index % len(args.arms)]
        runs = {arm: run_arm(arm, seed, max_epochs=args.max_epochs, factor=args.factor, master=args.master,
                             quiet=args.quiet, kill_after=args.kill_after) for arm in order}
        base = runs[args.arms[0]]
        levels = {arm: min(base["best_score"], r["best_score"]) for arm, r in runs.items()}
        to_level = {arm: [time_to(base["trace"], levels[arm]), time_to(r["trace"], levels[arm])]
                    for arm, r in runs.items()}
        seeds.append({"seed": seed, "order": order, "runs": runs,
                      "ratio": {arm: r["wall_s"] / base["wall_s"] for arm, r in runs.items()},
                      "level": levels, "time_to_level": to_level,
                      "ratio_to_level": {arm: t_arm / t_base if t_base and t_arm else None
                                         for arm, (t_base, t_arm) in to_level.items()},
                      "same_as_first": {arm: same_search(base, r) for arm, r in runs.items()}})

    path = output(meta, args.name or "executors", args.out)
    write_json(path, {"meta": meta, "kind": "executors", "arms": args.arms, "seeds": seeds, "summary": {
        "ratio": {arm: summary(s["ratio"][arm] for s in seeds) for arm in args.arms},
        "ratio_to_level": {arm: summary(s["ratio_to_level"][arm] for s in seeds) for arm in args.arms},
        "wall_s": {arm: summary(s["runs"][arm]["wall_s"] for s in seeds) for arm in args.arms},
        "best_score": {arm: summary(s["runs"][arm]["best_score"] for s in seeds) for arm in args.arms}}})
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

    k = sub.add_parser("keras-tuner", parents=[common],
                       help="Keras Tuner's Hyperband against sparkrm's Tuner: same build_fn(hp), same digits split")
    k.add_argument("--max-epochs", type=int, default=27, help="Hyperband R of both tuners (default 27)")
    k.add_argument("--factor", type=int, default=3, help="Hyperband eta of both tuners (default 3)")
    k.add_argument("--seeds", type=_ints, default=[0, 1, 2],
                   help="seeds of split, sampling and weights, one run per tuner each (default 0,1,2)")
    k.add_argument("--tuners", type=_words, default=["keras-tuner", "sparkrm"],
                   help="comma list of keras-tuner,sparkrm (default both; ratios need both)")
    k.add_argument("--problem", choices=PROBLEMS, default="digits",
                   help="the data both tuners search on (problems.py; default digits)")
    k.add_argument("--keep-best-epoch", action="store_true",
                   help="sparkrm's Tuner with keep_best_epoch=True: every epoch scored and each trial ranked by its "
                        "best epoch in the rung, as Keras Tuner does (default: scored at rung ends)")
    k.add_argument("--quiet", action="store_true", help="no progress bars")
    k.set_defaults(func=versus_keras_tuner, seed=None, repeats=None)

    d = sub.add_parser("hyperdrive", parents=[common],
                       help="time to a target accuracy: plain Hyperband, a kill threshold, HyperDrive")
    d.add_argument("--variants", type=_words, default=["hyperband", "kill", "hyperdrive"],
                   help="comma list of hyperband,kill,hyperdrive; the first is the baseline (default all three)")
    d.add_argument("--target", type=float, default=0.97, help="validation accuracy that ends a search (default 0.97)")
    d.add_argument("--max-epochs", type=int, default=27, help="Hyperband R (default 27)")
    d.add_argument("--factor", type=int, default=3, help="Hyperband eta (default 3)")
    d.add_argument("--seeds", type=_ints, default=[0, 1, 2, 3, 4], help="one run per variant each (default 0-4)")
    d.add_argument("--kill-threshold", type=float, default=0.3, help="the kill variant's threshold (default 0.3)")
    d.add_argument("--boundary", type=int, default=3,
                   help="HyperDrive's evaluation boundary in epochs (default 3, about 10%% of R=27)")
    d.add_argument("--quiet", action="store_true", help="no progress bars")
    d.set_defaults(func=hyperdrive, seed=None, repeats=None)

    e = sub.add_parser("executors", parents=[common],
                       help="Tuner(spark=...) on 1 and 2 one-core executors, and in one process (executors.py)")
    e.add_argument("--arms", type=_words, default=["spark-1", "spark-2", "local"],
                   help="comma list of spark-N (N one-core executors), spark-N+kill (one of them killed mid-search), "
                        "local (one process) and keras-tuner-N (Keras Tuner's chief and N one-core workers); the "
                        "first is the baseline of the ratios; ARM@label runs an arm again under another name "
                        "(spark-2,spark-2@again: A/A) (default spark-1,spark-2,local)")
    e.add_argument("--max-epochs", type=int, default=27, help="Hyperband R (default 27)")
    e.add_argument("--factor", type=int, default=3, help="Hyperband eta (default 3)")
    e.add_argument("--seeds", type=_ints, default=[0, 1, 2], help="one run per arm each (default 0,1,2)")
    e.add_argument("--kill-after", type=float, default=10.0,
                   help="seconds into the search at which a spark-N+kill arm kills executor 1 (default 10)")
    add_master_option(e)
    e.add_argument("--quiet", action="store_true", help="no progress bars")
    e.set_defaults(func=on_executors, seed=None, repeats=None)

    r = sub.add_parser("report", help="re-render Markdown and PNG from a result JSON")
    r.add_argument("json", type=Path, help="a result JSON written by impv, hyperband, keras-tuner or hyperdrive")
    r.set_defaults(func=lambda a: render(a.json))
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    path = args.func(args)
    print(path)
    return 0
