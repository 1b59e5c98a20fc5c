"""pack_opt: split a rung's configurations into packs that fit on one device (spec 6.2).

Each rung of pack-aware Hyperband partitions its surviving configurations into
groups; each group trains as one packed model. A group's estimated memory must
fit the device (``sum(est_mem) <= capacity``); a single configuration is always
a feasible group. Three heuristics from the thesis (L552-L594):

* ``knn``: pick a random centroid, add its nearest configurations by *index
  distance* while they fit and are within ``threshold``; repeat.
* ``random``: chunk a shuffled list into groups of ``group_size`` (split further
  when a chunk does not fit).
* ``batch_size``: pack only configurations with the same batch size, greedily,
  as many as fit.

``none`` gives singletons (plain Hyperband). This module imports no TensorFlow.
"""

from __future__ import annotations

import logging
import random

from .hyperparameters import HyperParameters

__all__ = ["STRATEGIES", "batch_size_pack", "check_partition", "index_distance", "knn_pack", "pack_opt",
           "random_pack", "split_group"]

log = logging.getLogger(__name__)

STRATEGIES = ("knn", "random", "batch_size", "none")


def index_distance(a: dict, b: dict, space) -> float:
    """Distance of two configurations: index gap for numeric values, 0/1 for categorical ones.

    Numeric hyper-parameters (batch size, learning rate) count the difference of
    their positions in the ordered value list (a continuous range counts as a
    grid of :data:`~tf_packing.tuner.hyperparameters.GRID` steps); categorical ones
    (optimizer, activation), and a parameter active in one configuration only,
    count 1 when they differ. The thesis calls the sum "Euclid"; it is an L1
    distance over indices (L552-L554). ``space`` is a HyperParameters or a dict
    of lists.

    Examples
    --------
    >>> space = {"batch_size": [20, 25, 30, 35, 40], "optimizer": ["Adam", "SGD", "Adagrad"],
    ...          "lr": [0.1, 0.01], "activation": ["relu", "tanh"]}
    >>> index_distance({"batch_size": 20, "optimizer": "SGD", "lr": 0.01, "activation": "relu"},
    ...                {"batch_size": 40, "optimizer": "Adagrad", "lr": 0.01, "activation": "relu"}, space)
    5.0
    """
    space = HyperParameters.of(space)
    total = 0.0
    for name in dict.fromkeys([*a, *b]):
        if name not in a or name not in b or not space.is_numeric(name):
            total += float(a.get(name) != b.get(name))
        else:
            total += abs(space.index(name, a[name]) - space.index(name, b[name]))
    return total


def _fits(group_mem: float, extra: float, capacity) -> bool:
    return capacity is None or group_mem + extra <= capacity


def _warn_oversized(memory, capacity):
    if capacity is None:
        return
    for i, m in enumerate(memory):
        if m > capacity:
            log.warning("configuration %d needs an estimated %.0f bytes, over the capacity of %.0f bytes; "
                        "it runs alone and may run out of memory", i, m, capacity)


def knn_pack(configs: list, space, memory: list, *, capacity=None, threshold=None, max_group=None,
             seed: int = 0) -> list:
    """Nearest-neighbour packing: groups around random centroids, nearest first, while they fit.

    Parameters
    ----------
    configs : list of dict
        The configurations to place.
    space : HyperParameters or dict of str to list
        The search space (for :func:`index_distance`).
    memory : list of float
        Estimated peak bytes of each configuration trained alone.
    capacity : float, optional
        Device memory in bytes; None means unlimited.
    threshold : float, optional
        Largest distance to the centroid a member may have; None means no limit.
    max_group : int, optional
        Most members per group.
    seed : int, default=0
        Seed of the centroid choice.

    Returns
    -------
    list of list of int
        A partition of ``range(len(configs))``.
    """
    space = HyperParameters.of(space)
    rng = random.Random(seed)
    left = list(range(len(configs)))
    groups = []
    while left:
        centroid = left.pop(rng.randrange(len(left)))
        group, used = [centroid], memory[centroid]
        for j in sorted(left, key=lambda k: (index_distance(configs[centroid], configs[k], space), k)):
            if max_group is not None and len(group) >= max_group:
                break
            if threshold is not None and index_distance(configs[centroid], configs[j], space) > threshold:
                break
            if _fits(used, memory[j], capacity):
                group.append(j)
                used += memory[j]
        left = [k for k in left if k not in group]
        groups.append(group)
    return groups


def random_pack(configs: list, memory: list, *, group_size: int = 4, capacity=None, seed: int = 0) -> list:
    """Random packing: shuffle, chunk into ``group_size``, split chunks that do not fit."""
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1. Got {group_size!r}.")
    order = list(range(len(configs)))
    random.Random(seed).shuffle(order)
    groups = []
    for start in range(0, len(order), group_size):
        groups.extend(_greedy_fill(order[start:start + group_size], memory, capacity, None))
    return groups


def batch_size_pack(configs: list, memory: list, *, key: str = "batch_size", capacity=None,
                    max_group=None) -> list:
    """Batch-size packing: only configurations with the same batch size share a pack."""
    by_size = {}
    for i, config in enumerate(configs):
        by_size.setdefault(config.get(key), []).append(i)
    groups = []
    for members in by_size.values():
        groups.extend(_greedy_fill(members, memory, capacity, max_group))
    return groups


def _greedy_fill(items, memory, capacity, max_group):
    """Fill groups in order, opening a new one when the next item does not fit."""
    groups, current, used = [], [], 0.0
    for i in items:
        full = max_group is not None and len(current) >= max_group
        if current and (full or not _fits(used, memory[i], capacity)):
            groups.append(current)
            current, used = [], 0.0
        current.append(i)
        used += memory[i]
    if current:
        groups.append(current)
    return groups


def split_group(group: list) -> list:
    """Halve a group that ran out of memory (the OOM fallback); a singleton cannot be split."""
    if len(group) < 2:
        raise ValueError(f"cannot split group {group}: a single configuration ran out of memory on its own. "
                         "Lower its batch size or use a larger device.")
    half = (len(group) + 1) // 2
    return [group[:half], group[half:]]


def check_partition(groups: list, n: int, memory=None, capacity=None) -> None:
    """Raise ValueError unless ``groups`` partition ``range(n)`` and every packed group fits."""
    flat = sorted(i for g in groups for i in g)
    if flat != list(range(n)):
        raise ValueError(f"groups {groups} are not a partition of range({n}).")
    if memory is not None and capacity is not None:
        for g in groups:
            if len(g) > 1 and sum(memory[i] for i in g) > capacity:
                raise ValueError(f"group {g} needs {sum(memory[i] for i in g):.0f} bytes, over the capacity of "
                                 f"{capacity:.0f}.")


def pack_opt(configs: list, space, memory: list, *, strategy: str = "knn", capacity=None, threshold=None,
             group_size: int = 4, max_group=None, key: str = "batch_size", seed: int = 0) -> list:
    """Partition ``configs`` into packs with the chosen ``strategy`` (see the module docstring).

    Returns
    -------
    list of list of int
        Groups of indices into ``configs``; every index appears exactly once.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}. Got {strategy!r}.")
    if len(memory) != len(configs):
        raise ValueError(f"memory has {len(memory)} estimates for {len(configs)} configurations; pass one each.")
    _warn_oversized(memory, capacity)
    if strategy == "knn":
        groups = knn_pack(configs, space, memory, capacity=capacity, threshold=threshold, max_group=max_group,
                          seed=seed)
    elif strategy == "random":
        groups = random_pack(configs, memory, group_size=group_size if max_group is None else min(group_size,
                             max_group), capacity=capacity, seed=seed)
    elif strategy == "batch_size":
        groups = batch_size_pack(configs, memory, key=key, capacity=capacity, max_group=max_group)
    else:
        groups = [[i] for i in range(len(configs))]
    check_partition(groups, len(configs), memory, capacity)
    log.info("pack_opt(%s): %d configurations in %d groups of sizes %s", strategy, len(configs), len(groups),
             sorted((len(g) for g in groups), reverse=True))
    return groups
