"""IMPV on a GPU machine without TensorFlow: Repack's packed step written in JAX.

The lent GPU machines have JAX, optax and CUDA but no TensorFlow, and nothing can
be installed there beyond 64 MiB of carried wheels (TensorFlow is about 600 MB).
This module therefore measures the *same algorithm* as ``tf_packing`` — one
shared batch gathered once per step, every member's loss and gradients in one
compiled step, each member with its own optimizer state and learning rate —
in plain JAX, against each model trained alone with its own compiled step:

* ``seq``: model i alone, ``steps`` steps of its own jitted step (T_s(Model i)).
* ``packed``: one jitted step over all members (a Python loop inside ``jit``),
  the counterpart of ``PackedModel`` with ``fuse="never"``.
* ``fused``: parameters and optimizer states stacked on a leading member axis
  and one step ``vmap``-ed over it (HFTA-style horizontal fusion), the
  counterpart of ``fuse="always"``.

Timing: ``steps`` steps dispatched back to back, then one device sync; the
warm-up (compile) run is dropped. Memory: XLA's compiled memory analysis of one
step (arguments + outputs + temporaries), for the pack and for each model alone.
Writes the same JSON shape as ``impv`` so ``report`` renders it.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

from benchmarks.common import spread


def _init(kind, key, in_shape, n_classes=10, hidden=256):
    import jax

    keys = jax.random.split(key, 8)
    glorot = jax.nn.initializers.glorot_uniform()
    if kind == "mlp":
        dims = [int(np.prod(in_shape)), hidden, hidden, hidden, n_classes]
        return [(glorot(k, (a, b)), np.zeros(b, "float32")) for k, a, b in zip(keys, dims, dims[1:])]
    c = in_shape[-1]
    return [(glorot(keys[0], (3, 3, c, 16)), np.zeros(16, "float32")),
            (glorot(keys[1], (3, 3, 16, 32)), np.zeros(32, "float32")),
            (glorot(keys[2], (32, n_classes)), np.zeros(n_classes, "float32"))]


def _apply(kind, params, x):
    import jax
    import jax.numpy as jnp

    if kind == "mlp":
        h = x.reshape(x.shape[0], -1)
        for w, b in params[:-1]:
            h = jax.nn.relu(h @ w + b)
        return h @ params[-1][0] + params[-1][1]
    conv = lambda h, w: jax.lax.conv_general_dilated(h, w, (1, 1), "SAME",
                                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    h = jax.nn.relu(conv(x, params[0][0]) + params[0][1])
    h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    h = jax.nn.relu(conv(h, params[1][0]) + params[1][1])
    return h.mean(axis=(1, 2)) @ params[2][0] + params[2][1]


def _loss(kind, params, x, y):
    import jax
    import jax.numpy as jnp

    logp = jax.nn.log_softmax(_apply(kind, params, x))
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


def _optimizer(lr):
    import optax

    return optax.inject_hyperparams(optax.adam)(learning_rate=lr)


def _steps(kind, batch):
    """Jitted steps: alone (one model), packed (a tuple of models), fused (stacked models)."""
    import jax
    import optax

    opt = _optimizer(1e-3)  # the learning rate lives in each state (inject_hyperparams)

    def update(params, state, x, y):
        loss, grads = jax.value_and_grad(lambda p: _loss(kind, p, x, y))(params)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    def alone(params, state, xs, ys, idx):
        return update(params, state, xs[idx], ys[idx])

    def packed(params, states, xs, ys, idx):
        x, y = xs[idx], ys[idx]  # the shared batch, gathered once
        out = [update(p, s, x, y) for p, s in zip(params, states)]
        return tuple(o[0] for o in out), tuple(o[1] for o in out), [o[2] for o in out]

    def fused(params, states, xs, ys, idx):
        x, y = xs[idx], ys[idx]
        return jax.vmap(update, in_axes=(0, 0, None, None))(params, states, x, y)

    return jax.jit(alone, donate_argnums=(0, 1)), jax.jit(packed, donate_argnums=(0, 1)), \
        jax.jit(fused, donate_argnums=(0, 1))


def _memory(fn, *args) -> int | None:
    try:
        m = fn.lower(*args).compile().memory_analysis()
        return int(m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes
                   - m.alias_size_in_bytes)
    except Exception:  # noqa: BLE001 - memory analysis is optional across backends
        return None


def _run(fn, params, states, xs, ys, batches):
    """Dispatch every batch, sync once; return (seconds per step, params, states)."""
    import jax

    start = time.perf_counter()
    for idx in batches:
        params, states, loss = fn(params, states, xs, ys, idx)
    jax.block_until_ready((params, loss))
    return (time.perf_counter() - start) / len(batches), params, states


def profile_jax(kind, n, xs, ys, *, batch_size, steps, repeats, variants, seed=0):
    import jax
    import jax.numpy as jnp

    in_shape = xs.shape[1:]
    alone_fn, packed_fn, fused_fn = _steps(kind, batch_size)
    lrs = [1e-3 * (1 + i % 4) for i in range(n)]  # members differ in learning rate
    models = [_init(kind, jax.random.PRNGKey(seed + i), in_shape) for i in range(n)]
    states = [_optimizer(lr).init(p) for lr, p in zip(lrs, models)]
    rng = np.random.default_rng(seed)
    batches = [jnp.asarray(rng.integers(0, len(xs), batch_size)) for _ in range(steps)]
    copy = lambda tree: jax.tree.map(jnp.array, tree)
    alone = [[copy(p), copy(s)] for p, s in zip(models, states)]
    packs = {}
    if "packed" in variants:
        packs["packed"] = [packed_fn, tuple(copy(models)), tuple(copy(states))]
    if "fused" in variants and n > 1:
        stack = lambda trees: jax.tree.map(lambda *a: jnp.stack(a), *trees)
        packs["fused"] = [fused_fn, stack(models), stack(states)]
    peaks = {"models": [_memory(alone_fn, *alone[0], xs, ys, batches[0])] * n}
    for name, (fn, p, s) in packs.items():
        peaks[name] = _memory(fn, p, s, xs, ys, batches[0])
    for entry in alone:  # warm-up (compile), dropped
        _, entry[0], entry[1] = _run(alone_fn, *entry, xs, ys, batches[:1])
    for entry in packs.values():
        _, entry[1], entry[2] = _run(*entry, xs, ys, batches[:1])
    raw = {"models": [[] for _ in range(n)], **{k: [] for k in packs}}
    for rep in range(repeats):
        order = ["seq", *packs] if rep % 2 == 0 else [*packs, "seq"]
        for what in order:
            if what == "seq":
                for i, entry in enumerate(alone):
                    t, entry[0], entry[1] = _run(alone_fn, *entry, xs, ys, batches)
                    raw["models"][i].append(t)
            else:
                entry = packs[what]
                t, entry[1], entry[2] = _run(*entry, xs, ys, batches)
                raw[what].append(t)
    t_models = [statistics.median(r) for r in raw["models"]]
    t_pack = {k: statistics.median(raw[k]) for k in packs}
    seq_runs = [sum(r) for r in zip(*raw["models"])]
    return {"n_models": n, "batch_sizes": [batch_size] * n, "steps": steps, "repeats": repeats,
            "t_models": t_models, "t_seq": sum(t_models), "t_pack": t_pack,
            "impv": {k: (sum(t_models) - v) / sum(t_models) for k, v in t_pack.items()},
            "impv_spread": {k: spread([(s - p) / s for s, p in zip(seq_runs, raw[k])]) for k in packs},
            "raw": raw, "peak_bytes": peaks, "memory_kind": "xla_step_analysis"}


def jax_impv(args):
    import datetime
    import json
    import platform
    from pathlib import Path

    import jax

    from .report import render

    device = jax.devices()[0]
    meta = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "git_sha": os.environ.get("REPACK_GIT_SHA", "unknown"), "python": sys.version.split()[0],
            "framework": f"JAX {jax.__version__} (TensorFlow is not installable on this machine)",
            "tensorflow": "absent", "keras": "absent", "device": getattr(device, "device_kind", str(device)),
            "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
            "conf": {k: v for k, v in vars(args).items() if k != "func"}}
    shapes = {"mlp": (28, 28, 1), "cnn": (32, 32, 3)}
    rows = []
    for kind in args.models:
        rng = np.random.default_rng(args.seed)
        xs = jax.device_put(rng.normal(size=(args.examples, *shapes[kind])).astype("float32"))
        ys = jax.device_put(rng.integers(0, 10, args.examples).astype("int32"))
        for n in args.counts:
            variants = [v for v in args.variants if not (v == "packed" and n > args.max_unrolled)]
            row = {"model": kind, **profile_jax(kind, n, xs, ys, batch_size=args.batch_size, steps=args.steps,
                                               repeats=args.repeats, variants=variants, seed=args.seed)}
            rows.append(row)
            print(f"{kind} n={n}: T_s(Seq) {row['t_seq'] * 1e3:.3f} ms, " + ", ".join(
                f"{v} {t * 1e3:.3f} ms (IMPV {row['impv'][v]:+.1%})" for v, t in row["t_pack"].items()),
                file=sys.stderr, flush=True)
    folder = Path(args.out) if args.out else Path(__file__).resolve().parent.parent / "results" / "repack"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{args.name or 'impv-gpu-jax'}-{meta['date'][:10]}-{meta['git_sha']}.json"
    path.write_text(json.dumps({"meta": meta, "kind": "impv", "results": rows, "swoh": {}}, indent=1))
    render(path)
    return path
