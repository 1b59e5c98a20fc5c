"""Iterative trainers on Spark that report their loss to SLAQ every iteration (spec 8, 9.1.1).

``pyspark.ml`` estimators expose their objective only after ``fit`` ends, so SLAQ cannot see them
converge. These trainers drive the iterations themselves: each iteration is one Spark job over the
training data cached on the executors as numpy blocks, it runs on exactly the cores SLAQ granted
(the cached partitions are coalesced to that many tasks), and it reports ``(iteration, loss,
CPU seconds, data size)`` through the job handle. The CPU time is measured inside the tasks
(``time.process_time`` of the Python workers, where the work happens; the JVM's
``executorCpuTime`` does not see it).

Estimators follow scikit-learn's shape: hyperparameters in ``__init__``, ``fit(data, job)``
returns ``self`` with learned attributes ending in ``_`` (``coef_``, ``loss_curve_``...).
``job`` is a :class:`~spark_plugin.slaq.scheduler.TrainingJob`; ``None`` trains on every
partition with nobody to report to.
"""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from ..ownership import FolderKind

#: The folder of :meth:`TrainingData.from_numpy`'s blocks: removed by ``unpersist`` only while it holds nothing else.
BLOCKS = FolderKind("SLAQ training blocks", ("block-*.npz",))


class TrainingData:
    """Features (and labels) cached on the executors, one numpy block per partition.

    Build it with :meth:`from_dataframe` (any DataFrame: Parquet, a table, a pipeline's output) or
    :meth:`from_numpy`; ``partitions`` bounds the cores one iteration can use.
    """

    def __init__(self, rdd, rows: int, features: int, partitions: int, directory: Path | None = None):
        self.rdd, self.rows, self.features, self.partitions = rdd, rows, features, partitions
        self.directory = directory

    @classmethod
    def from_numpy(cls, sc, x, y=None, *, partitions: int | None = None, directory=None) -> "TrainingData":
        """Split ``x`` (and ``y``) into row blocks, cache them on the executors and materialize them.

        The blocks go through ``.npz`` files in ``directory`` (default: a new temporary folder;
        on a multi-host cluster pass one every executor can read), not through
        ``sc.parallelize``: a parallelized partition carries its data inside every task that
        reads it, cached or not, which would ship the whole data set with every iteration. From
        files, a block an executor loses (a SLAQ rescale kills executors) is reloaded.
        ``directory`` must be new, empty or one such folder sparkrm wrote (:data:`BLOCKS`): one
        holding anything else is refused (:class:`~spark_plugin.errors.NotOursError`), untouched.
        """
        x = np.ascontiguousarray(x, dtype=np.float64)
        if x.ndim != 2 or not len(x):
            raise ValueError(f"x must be a non-empty 2-D array of rows. Got shape {x.shape}.")
        if y is not None and len(y) != len(x):
            raise ValueError(f"y must have one label per row of x. Got {len(y)} labels for {len(x)} rows.")
        directory = BLOCKS.claim(directory or tempfile.mkdtemp(prefix="sparkrm-slaq-data-"), what="directory")
        partitions = int(partitions or sc.defaultParallelism)
        paths = []
        for i, rows in enumerate(np.array_split(np.arange(len(x)), min(partitions, len(x)))):
            paths.append(str(directory / f"block-{i:05d}.npz"))
            labels = np.empty(0) if y is None else np.asarray(y, dtype=np.float64)[rows]
            np.savez(paths[-1], x=x[rows], y=labels, has_y=y is not None)
        rdd = sc.parallelize(paths, len(paths)).map(_load_block).cache()
        rdd.count()
        return cls(rdd, len(x), x.shape[1], len(paths), directory)

    @classmethod
    def from_dataframe(cls, df, features: str | list = "features", label: str | None = None, *,
                       partitions: int | None = None) -> "TrainingData":
        """Cache ``df``'s rows on the executors as numpy blocks, built where the rows are (nothing passes the driver).

        ``features`` is a vector column (``pyspark.ml``'s ``VectorAssembler`` output) or a list of
        numeric columns; ``label`` a numeric column or ``None`` (clustering). Each of
        ``partitions`` (default: the DataFrame's own) becomes one cached block; a block an executor
        loses is rebuilt from the DataFrame's lineage.

        Raises
        ------
        ValueError
            Naming the column that is missing or not numeric, or when ``df`` has no rows.
        """
        columns = [features] if isinstance(features, str) else list(features)
        wanted = columns + ([label] if label else [])
        types = dict(df.dtypes)
        for name in wanted:
            if name not in types:
                raise ValueError(f"column {name!r} is not in the DataFrame (it has {sorted(types)}).")
        vector = isinstance(features, str) and types[features] == "vector"
        for name in wanted:
            if not (name == features and vector) and not types[name].startswith(_NUMERIC):
                raise ValueError(f"column {name!r} is {types[name]}, not numeric: pass a vector column "
                                 f"or numeric columns (e.g. assemble them with pyspark.ml's VectorAssembler).")
        rows = df.select(*wanted)
        if partitions:
            rows = rows.repartition(int(partitions)) if partitions > rows.rdd.getNumPartitions() else \
                rows.coalesce(int(partitions))
        has_label = label is not None

        def to_block(part):
            part = list(part)
            if not part:
                return
            if vector:
                x = np.array([r[0].toArray() for r in part], dtype=np.float64)
            else:
                x = np.array([r[:len(columns)] for r in part], dtype=np.float64)
            y = np.array([r[-1] for r in part], dtype=np.float64) if has_label else None
            yield x, y

        rdd = rows.rdd.mapPartitions(to_block).cache()
        shapes = rdd.map(lambda block: block[0].shape).collect()
        if not shapes:
            raise ValueError("the DataFrame has no rows to train on.")
        return cls(rdd, sum(n for n, _ in shapes), shapes[0][1], rdd.getNumPartitions())

    def unpersist(self) -> None:
        """Drop the cached blocks and their folder (only ever a :data:`BLOCKS` folder holding nothing else)."""
        self.rdd.unpersist()
        if self.directory is not None:
            BLOCKS.remove(self.directory)

    def aggregate(self, cores: int, block_fn) -> tuple[tuple, float]:
        """Sum ``block_fn(x, y)`` (a tuple of arrays/numbers) over every block as one Spark job on ``cores`` tasks.

        Returns the summed tuple and the CPU seconds the tasks spent.
        """
        rdd = self.rdd if cores >= self.partitions else self.rdd.coalesce(max(int(cores), 1))

        def partition(blocks):
            started = time.process_time()
            total = None
            for x, y in blocks:
                part = block_fn(x, y)
                total = part if total is None else tuple(a + b for a, b in zip(total, part))
            yield total, time.process_time() - started

        total, cpu = None, 0.0
        for part, part_cpu in rdd.mapPartitions(partition).collect():
            cpu += part_cpu
            if part is not None:
                total = part if total is None else tuple(a + b for a, b in zip(total, part))
        return total, cpu

    def sample_rows(self, n: int, seed: int) -> np.ndarray:
        """``n`` distinct rows drawn uniformly from the whole data set (one Spark job)."""
        rows = self.rows

        def pick(index, blocks):
            rng = np.random.default_rng([seed, index])
            for x, _ in blocks:
                take = rng.random(len(x)) < min(1.0, 4.0 * n / rows)  # ~4n candidates overall
                yield x[take]

        candidates = np.concatenate(self.rdd.mapPartitionsWithIndex(pick).collect())
        if len(candidates) < n:
            raise ValueError(f"cannot draw {n} rows from {rows}.")
        return candidates[np.random.default_rng(seed).choice(len(candidates), n, replace=False)]


_NUMERIC = ("double", "float", "int", "bigint", "smallint", "tinyint", "boolean", "decimal")


def _load_block(path: str):
    with np.load(path) as block:
        return block["x"], (block["y"] if bool(block["has_y"]) else None)


class _Unscheduled:
    """Stands in for a job handle when training runs alone: every partition, no reports."""

    def __init__(self, data: TrainingData):
        self._cores = data.partitions

    def wait_for_cores(self, timeout=None) -> int:
        return self._cores

    def report(self, *args, **kwargs) -> None:
        pass


class _IterativeTrainer:
    """Shared loop: ``max_iter`` iterations, each one Spark job, the loss reported after each."""

    def fit(self, data: TrainingData, job=None):
        job = job or _Unscheduled(data)
        self.loss_curve_ = []
        state = self._init_state(data)
        for k in range(self.max_iter):
            cores = job.wait_for_cores()
            loss, state, cpu = self._iterate(data, state, k, cores)
            self.loss_curve_.append(loss)
            job.report(k, loss, cpu_time_s=cpu, data_size=1.0)
            if self.tol and k and abs(self.loss_curve_[-2] - loss) <= self.tol * max(abs(loss), 1e-12):
                break
        self._set_result(state)
        self.n_iter_ = len(self.loss_curve_)
        return self


def _linear_parts(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    return x @ w[:-1] + w[-1]


class _LinearGD(_IterativeTrainer):
    """Full-batch (sub)gradient descent on ``w = (coef, intercept)`` with an L2 penalty ``reg`` on the
    coefficients. A subclass gives the per-block (loss sum, gradient sum) and the step size."""

    def _init_state(self, data):
        return np.zeros(data.features + 1)

    def _iterate(self, data, w, k, cores):
        (loss_sum, grad), cpu = data.aggregate(cores, self._block(w))
        loss = loss_sum / data.rows + 0.5 * self.reg * float(w[:-1] @ w[:-1])
        return loss, w - self._step_size(k) * (grad / data.rows + self.reg * np.append(w[:-1], 0.0)), cpu

    def _set_result(self, w):
        self.coef_, self.intercept_ = w[:-1], float(w[-1])


class LogisticRegressionGD(_LinearGD):
    """Binary logistic regression (labels 0/1) by full-batch gradient descent with L2 penalty ``reg``."""

    def __init__(self, *, step: float = 1.0, reg: float = 1e-4, max_iter: int = 100, tol: float = 0.0):
        self.step, self.reg, self.max_iter, self.tol = step, reg, max_iter, tol

    def _block(self, w):
        def block(x, y):
            z = _linear_parts(w, x)
            residual = 1.0 / (1.0 + np.exp(-z)) - y
            return (float(np.sum(np.logaddexp(0.0, z) - y * z)), np.append(x.T @ residual, residual.sum()))
        return block

    def _step_size(self, k):
        return self.step


class LinearSVMGD(_LinearGD):
    """Linear SVM (labels 0/1) by subgradient descent on the L2-regularized hinge loss, step ``step/sqrt(k+1)``."""

    def __init__(self, *, step: float = 1.0, reg: float = 1e-3, max_iter: int = 100, tol: float = 0.0):
        self.step, self.reg, self.max_iter, self.tol = step, reg, max_iter, tol

    def _block(self, w):
        def block(x, y):
            sign = 2.0 * y - 1.0
            margin = sign * _linear_parts(w, x)
            active = sign * (margin < 1.0)
            return (float(np.maximum(0.0, 1.0 - margin).sum()), -np.append(x.T @ active, active.sum()))
        return block

    def _step_size(self, k):
        return self.step / math.sqrt(k + 1)


class KMeansLloyd(_IterativeTrainer):
    """K-Means by Lloyd's iterations; the loss is the mean squared distance to the nearest center."""

    def __init__(self, n_clusters: int = 8, *, max_iter: int = 50, tol: float = 0.0, seed: int = 0):
        self.n_clusters, self.max_iter, self.tol, self.seed = n_clusters, max_iter, tol, seed

    def _init_state(self, data):
        return data.sample_rows(self.n_clusters, self.seed)

    def _iterate(self, data, centers, k, cores):
        n = len(centers)

        def block(x, _):
            d2 = (x * x).sum(1)[:, None] - 2.0 * x @ centers.T + (centers * centers).sum(1)[None, :]
            nearest = d2.argmin(1)
            sums = np.zeros_like(centers)
            np.add.at(sums, nearest, x)
            return (float(np.maximum(d2[np.arange(len(x)), nearest], 0.0).sum()), sums,
                    np.bincount(nearest, minlength=n).astype(float))

        (loss_sum, sums, counts), cpu = data.aggregate(cores, block)
        moved = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1.0)[:, None], centers)
        return loss_sum / data.rows, moved, cpu

    def _set_result(self, centers):
        self.cluster_centers_ = centers


class LinearRegressionLBFGS:
    """Least-squares linear regression with L2 penalty by L-BFGS (scipy's driver, Spark's gradients).

    Every loss-and-gradient evaluation is one Spark job on the granted cores; an iteration (one
    L-BFGS step, usually one evaluation, more when the line search backtracks) is reported with
    the CPU time of all its evaluations.
    """

    def __init__(self, *, reg: float = 1e-4, max_iter: int = 50, tol: float = 1e-9):
        self.reg, self.max_iter, self.tol = reg, max_iter, tol

    def fit(self, data: TrainingData, job=None):
        job = job or _Unscheduled(data)
        self.loss_curve_ = []
        pending_cpu = [0.0]

        def loss_and_grad(w):
            def block(x, y):
                residual = _linear_parts(w, x) - y
                return (float(residual @ residual), np.append(x.T @ residual, residual.sum()))

            (sq, grad), cpu = data.aggregate(job.wait_for_cores(), block)
            pending_cpu[0] += cpu
            penalty = np.append(w[:-1], 0.0)
            return (0.5 * sq / data.rows + 0.5 * self.reg * float(w[:-1] @ w[:-1]),
                    grad / data.rows + self.reg * penalty)

        def on_iteration(intermediate_result):
            loss = float(intermediate_result.fun)
            job.report(len(self.loss_curve_), loss, cpu_time_s=pending_cpu[0], data_size=1.0)
            self.loss_curve_.append(loss)
            pending_cpu[0] = 0.0

        result = minimize(loss_and_grad, np.zeros(data.features + 1), jac=True, method="L-BFGS-B",
                          callback=on_iteration, options={"maxiter": self.max_iter, "ftol": self.tol, "gtol": 0.0})
        self.coef_, self.intercept_ = result.x[:-1], float(result.x[-1])
        self.n_iter_ = len(self.loss_curve_)
        return self
