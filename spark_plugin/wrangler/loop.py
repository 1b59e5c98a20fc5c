"""Wrangler's Python side for one application: it trains and installs models; the driver JVM decides.

Every hold is decided in the driver JVM (``dev.sparkrm.wrangler.JvmDecisions``): each interval it scores
every executor's newest node sample with the installed model, flags an executor when its score is
positive and its confidence above p, and holds the flagged ones most confident first, at most
``spark.wrangler.hold.maxShare`` of the executors (at least one) and never all (``mode=hold``: for two
intervals, renewed while they stay flagged, released at once after) or logs "would delay"
(``mode=hint``). An executor whose samples stop while the others' keep coming (a frozen JVM, a stalled
host) is held as if flagged with full confidence, model or not. The JVM's feedback guard
has the last word on every hold (``FeedbackGuard``): an executor whose recent tasks are not slow is
refused, whatever the model says.

This side gives the JVM its model and reads its decisions back (:attr:`Wrangler.decisions_`):

* a given :class:`.StragglerPredictor`, or a joblib ``spark.wrangler.model.path``, is exported to JSON
  (:mod:`.export`) and installed; a JSON model path was installed by the JVM itself at start-up;
* without a model it trains online: a daemon thread collects the first ``warmup`` of telemetry, trains
  a :class:`.StragglerPredictor`, installs it and ends (the thesis's protocol: the model is frozen). When
  the rows cannot train a model yet (too few, or no straggler), it says why once, keeps everything it has
  collected and tries again each time the data has grown by a quarter; meanwhile the JVM holds only silent
  executors. A failing tick is logged and the next one runs.
"""

from __future__ import annotations

import logging
import threading
import time

import pandas as pd
from py4j.protocol import Py4JError

from ..arguments import by_key
from ..errors import SparkrmError
from ..telemetry_reader import telemetry
from ._jvm import JvmDecisions, settings
from .dataset import build_dataset
from .predictor import StragglerPredictor

log = logging.getLogger(__name__)
#: Online training retries once the collected tasks have grown by this factor since the last try.
RETRY_GROWTH = 1.25
_RUNNING: dict = {}
_LOCK = threading.Lock()


class Wrangler:
    """Wrangler for one SparkSession: the model it decides with, and its decisions.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        A session with the ``wrangler`` feature on.
    predictor : StragglerPredictor, str, pathlib.Path or None, default=None
        A fitted model, or the path of a JSON model, for the JVM to decide with; else
        ``spark.wrangler.model.path``, else trained online.
    mode, confidence, warmup_ms, workload : optional
        Override ``spark.wrangler.mode``, ``.confidence``, ``.train.warmup`` and ``.workload`` of the session;
        each is checked by its key's rule here, and ``None`` leaves the session's.
    clock : callable, default=time.monotonic
        Seconds, read to tell when online training's warm-up is over (tests pass one they move).

    Attributes
    ----------
    predictor_ : StragglerPredictor or None
        The Python model installed (given, loaded or trained online); None for a JSON model or before training.
    decisions_ : list of dict
        The JVM's decisions since this object started, one per executor chosen at a tick: ``seq``, ``time``,
        ``executorId``, ``score`` (None for a silent executor), ``confidence``, ``why`` (``model`` or
        ``silent``), ``action`` (``held``, ``renewed``, a refusal reason such as the guard's ``unconfirmed``,
        or ``hint``).
    predict_seconds_ : list of float
        Seconds each of the JVM's ticks spent scoring the executors.
    ticks_ : int
        The JVM's decision ticks so far.
    """

    def __init__(self, spark, *, predictor=None, mode=None, confidence=None, warmup_ms=None, workload=None,
                 clock=time.monotonic):
        self.spark = spark
        self.clock = clock
        self.predictor = predictor

        def checked(key, value, name):
            return None if value is None else by_key(f"spark.wrangler.{key}", value, what=f"Wrangler's {name}")

        self.mode = checked("mode", mode, "mode")
        self.confidence = checked("confidence", confidence, "confidence")
        self.warmup_ms = checked("train.warmup", warmup_ms, "warmup_ms")
        self.workload = checked("workload", workload, "workload")

    def start(self) -> "Wrangler":
        """Resolve the settings, give the JVM its model (or start training online) and let it decide."""
        conf = settings(self.spark)
        self.mode_ = conf["mode"] if self.mode is None else self.mode
        self.p_ = conf["confidence"] if self.confidence is None else self.confidence
        self.interval_ms_ = conf["interval"]
        self.warmup_ms_ = conf["train.warmup"] if self.warmup_ms is None else self.warmup_ms
        self.workload_ = self.workload or conf["workload"] or "default"
        self._conf = conf
        self._jvm = JvmDecisions(self.spark)
        self._jvm.configure(hint=self.mode_ == "hint", confidence=self.p_, workload=self.workload_)
        self._first = self._jvm.last()
        self._stop = threading.Event()
        self._thread = None
        self.predictor_, self.errors_ = None, 0
        path = str(conf["model.path"] or "")
        if self.predictor is not None:
            self._install(self.predictor)
            origin = "given"
        elif path.endswith(".json"):
            origin = f"{path}, installed by the JVM"
        elif path:
            self._install(StragglerPredictor.load(path, what="spark.wrangler.model.path"))
            origin = f"{path}, exported to the JVM"
        else:
            self._tm = telemetry(self.spark)
            self._cursor, self._history = 0, {"task": [], "node": []}
            self._tasks_seen, self._retry_at, self._untrained_said = 0, 1, False
            self._started = self.clock()
            self._thread = threading.Thread(target=self._run, name="wrangler-training", daemon=True)
            self._thread.start()
            origin = f"trained online after {self.warmup_ms_} ms"
        self._jvm.resume()
        log.info("Wrangler decides in the driver JVM: mode %s, p %.2f, model %s", self.mode_, self.p_, origin)
        return self

    @property
    def decisions_(self) -> list[dict]:
        return self._jvm.decisions(after=self._first)

    @property
    def predict_seconds_(self) -> list[float]:
        return self._jvm.predict_seconds()

    @property
    def ticks_(self) -> int:
        return self._jvm.ticks()

    def stop(self) -> None:
        """Stop training, and the JVM's decisions (their holds are released); safe to call twice."""
        if not hasattr(self, "_stop") or self._stop.is_set():
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        try:
            self._jvm.pause()
        except Py4JError:
            pass  # the driver JVM is gone; its holds went with it

    def _install(self, predictor) -> None:
        self._jvm.install(predictor)
        if isinstance(predictor, StragglerPredictor):
            self.predictor_ = predictor

    def _run(self) -> None:
        while self.predictor_ is None and not self._stop.wait(self.interval_ms_ / 1000):
            if self.spark.sparkContext._jsc is None:
                return  # the session was stopped
            try:
                self._tick()
            except (Py4JError, SparkrmError, ValueError, RuntimeError, OSError, KeyError) as e:
                self.errors_ += 1
                log.warning("Wrangler's online training failed (%d so far): %s", self.errors_, e)

    def _tick(self) -> None:
        records = self._tm.records(since=self._cursor)
        for table in records.values():
            if table.num_rows:
                self._cursor = max(self._cursor, int(table["seq"].to_numpy().max()))
        tasks = records["task"].to_pandas()
        self._history["task"].append(tasks)
        self._history["node"].append(records["node"].to_pandas())
        self._tasks_seen += len(tasks)
        if (self.clock() - self._started) * 1000 < self.warmup_ms_ or self._tasks_seen < self._retry_at:
            return
        try:
            data = build_dataset(pd.concat(self._history["task"]), pd.concat(self._history["node"]),
                                 beta=self._conf["beta"], scope=self._conf["scope"], workload=self.workload_,
                                 max_age_ms=2 * self.interval_ms_)
            reason = StragglerPredictor.untrainable_reason(data)
            if reason is None:
                predictor = StragglerPredictor(min_node_tasks=self._conf["train.minNodeTasks"]).fit(data)
        except (ValueError, KeyError) as e:
            reason = f"{type(e).__name__}: {e}."
        if reason is not None:
            self._retry_at = max(int(self._tasks_seen * RETRY_GROWTH), self._tasks_seen + 1)
            (log.debug if self._untrained_said else log.warning)(
                "Wrangler cannot train its model yet: %s It keeps the %d tasks collected and tries again at %d "
                "tasks; meanwhile it holds only silent executors.", reason, self._tasks_seen, self._retry_at)
            self._untrained_said = True
            return
        self._install(predictor)
        self._history = {"task": [], "node": []}
        log.info("Wrangler trained online on %d rows (%d stragglers): %d node models, installed in the driver JVM",
                 len(data), int(data.y.sum()), len(predictor.node_models_))


def start(spark, **kwargs) -> Wrangler:
    """Start Wrangler's Python side for ``spark`` (or return the one already running for its application).

    Keyword arguments are those of :class:`Wrangler`.

    Raises
    ------
    WranglerUnavailable
        If the session was started without the ``wrangler`` feature.
    """
    app = spark.sparkContext.applicationId
    with _LOCK:
        running = _RUNNING.get(app)
        if running is not None and not running._stop.is_set():
            log.warning("Wrangler already runs for %s; returning it (stop() it to change settings)", app)
            return running
        _RUNNING[app] = Wrangler(spark, **kwargs).start()
        return _RUNNING[app]


def running(spark) -> Wrangler | None:
    """The :class:`Wrangler` started for ``spark``'s application and not stopped, if any."""
    loop = _RUNNING.get(spark.sparkContext.applicationId)
    return None if loop is None or loop._stop.is_set() else loop
