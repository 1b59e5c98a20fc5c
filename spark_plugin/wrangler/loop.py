"""The driver-side predictor loop: every interval, score each executor's newest sample and act.

Runs as a daemon thread in the user's driver process (policy and models stay in
Python; the JVM only samples and holds). Each tick it reads new telemetry in one
batch, keeps each executor's newest ``node`` sample, and, once it has a model,
scores every live executor and applies :func:`.policy.choose_holds`:

* ``mode="hold"``: hold the chosen executors for two intervals (renewed every
  tick while they stay flagged), release the others at once;
* ``mode="hint"``: hold nothing, log "would delay" for each chosen executor.

An executor whose samples stop while Spark still lists it and the others' samples
keep coming (a frozen JVM, a stalled host) is chosen as if flagged with full
confidence, model or not: tasks sent to it would wait as long as it stays silent. The JVM's feedback guard has the last word on
every hold (:class:`dev.sparkrm.wrangler.FeedbackGuard`): an executor whose recent
tasks are not slow is refused, whatever the model says.

Without a model path it trains online: it collects the first ``warmup`` of
telemetry, trains a :class:`.StragglerPredictor` and freezes it (the thesis's
protocol). When the rows cannot train a model yet (too few, or no straggler), it
says why once, keeps everything it has collected and tries again each time the
data has grown by a quarter. A failing tick is logged and the next one runs.
"""

from __future__ import annotations

import logging
import math
import threading
import time

import numpy as np
import pandas as pd
from py4j.protocol import Py4JError

from ..errors import SparkrmError
from ..telemetry_reader import telemetry
from ._jvm import JvmHolds, settings
from .dataset import build_dataset
from .policy import choose_holds
from .predictor import StragglerPredictor

log = logging.getLogger(__name__)
#: An executor whose newest sample is this many intervals (and at least SILENT_MIN_MS) older than the newest
#: sample of any executor is silent.
SILENT_INTERVALS, SILENT_MIN_MS = 3, 3000
#: Online training retries once the collected tasks have grown by this factor since the last try.
RETRY_GROWTH = 1.25
_RUNNING: dict = {}
_LOCK = threading.Lock()


class Wrangler:
    """Wrangler's predictor loop for one SparkSession.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        A session with the ``wrangler`` feature on.
    predictor : StragglerPredictor or None, default=None
        A model to use; else ``spark.wrangler.model.path``, else trained online.
    mode, confidence, interval_ms, warmup_ms, workload : optional
        Override ``spark.wrangler.mode``, ``.confidence``, ``.interval``,
        ``.train.warmup`` and ``.workload`` of the session.

    Attributes
    ----------
    predictor_ : StragglerPredictor or None
    decisions_ : list of dict
        One entry per executor chosen at a tick: ``time``, ``executorId``, ``score``,
        ``confidence``, ``why`` (``model`` or ``silent``), ``action`` (``held``, ``renewed``, a
        refusal reason such as the guard's ``unconfirmed``, or ``hint``).
    predict_seconds_ : list of float
        Wall time of each tick's prediction over all executors.
    ticks_ : int
    """

    def __init__(self, spark, *, predictor=None, mode=None, confidence=None, interval_ms=None, warmup_ms=None,
                 workload=None):
        self.spark = spark
        self.predictor = predictor
        self.mode = mode
        self.confidence = confidence
        self.interval_ms = interval_ms
        self.warmup_ms = warmup_ms
        self.workload = workload

    def start(self) -> "Wrangler":
        """Resolve the settings, load or plan the model, and start the thread."""
        conf = settings(self.spark)
        self.mode_ = self.mode or conf["mode"]
        self.p_ = conf["confidence"] if self.confidence is None else self.confidence
        self.interval_ms_ = self.interval_ms or conf["interval"]
        self.warmup_ms_ = self.warmup_ms or conf["train.warmup"]
        self.workload_ = self.workload or conf["workload"] or "default"
        self._conf = conf
        self.predictor_ = self.predictor
        self._stop = threading.Event()
        if self.predictor_ is None and str(conf["model.path"]).endswith(".json"):
            self._stop.set()  # the driver JVM scores a JSON model and decides (JvmDecisions): nothing to do here
            log.info("Wrangler's decisions run in the driver JVM with %s; no Python loop", conf["model.path"])
            return self
        if self.predictor_ is None and conf["model.path"]:
            self.predictor_ = StragglerPredictor.load(conf["model.path"])
        self._holds = JvmHolds(self.spark)
        self._tm = telemetry(self.spark)
        self._cursor, self._latest, self._removed = 0, {}, set()
        self._history = {"task": [], "node": []}
        self._tasks_seen, self._retry_at, self._untrained_said = 0, 1, False
        self._started = time.time() * 1000
        self._held: set = set()
        self.decisions_, self.predict_seconds_, self.ticks_, self.errors_ = [], [], 0, 0
        self._thread = threading.Thread(target=self._run, name="wrangler-predictor", daemon=True)
        self._thread.start()
        log.info("Wrangler predictor started: mode %s, p %.2f, interval %d ms, model %s", self.mode_, self.p_,
                 self.interval_ms_, "given" if self.predictor_ else f"trained online after {self.warmup_ms_} ms")
        return self

    def stop(self) -> None:
        """Stop the thread and release this loop's holds; safe to call twice."""
        if not hasattr(self, "_stop") or self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(timeout=30)
        for executor in sorted(self._held):
            try:
                self._holds.release(executor)
            except Py4JError:
                break  # the driver JVM is gone; its holds went with it
        self._held.clear()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_ms_ / 1000):
            if self.spark.sparkContext._jsc is None:
                return  # the session was stopped
            try:
                self._tick()
            except (Py4JError, SparkrmError, ValueError, RuntimeError, OSError, KeyError) as e:
                self.errors_ += 1
                log.warning("Wrangler predictor tick failed (%d so far): %s", self.errors_, e)

    def _tick(self) -> None:
        self.ticks_ += 1
        records = self._tm.records(since=self._cursor)
        for table in records.values():
            if table.num_rows:
                self._cursor = max(self._cursor, int(table["seq"].to_numpy().max()))
        nodes = records["node"].to_pandas()
        for row in nodes.to_dict("records"):
            self._latest[row["executorId"]] = row
        self._removed |= {e["executorId"] for e in records["executor"].to_pylist() if e["event"] == "removed"}
        if self.predictor_ is None:
            self._train_when_warm(records["task"].to_pandas(), nodes)
        self._act(time.time() * 1000)

    def _train_when_warm(self, tasks: pd.DataFrame, nodes: pd.DataFrame) -> None:
        self._history["task"].append(tasks)
        self._history["node"].append(nodes)
        self._tasks_seen += len(tasks)
        if time.time() * 1000 - self._started < self.warmup_ms_ or self._tasks_seen < self._retry_at:
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
        self.predictor_, self._history = predictor, {"task": [], "node": []}
        log.info("Wrangler trained online on %d rows (%d stragglers): %d node models", len(data), int(data.y.sum()),
                 len(self.predictor_.node_models_))

    def _predictions(self, now: float) -> tuple[dict, set]:
        """``executor -> (score, confidence, why)`` for silent and, with a model, freshly sampled executors; and the live ones."""
        live = {ex: row for ex, row in self._latest.items() if ex not in self._removed}
        silent_ms = max(SILENT_INTERVALS * self.interval_ms_, SILENT_MIN_MS)
        newest = max((row["time"] for row in live.values()), default=now)  # a lagging feed silences no one
        predictions = {ex: (math.inf, 1.0, "silent") for ex, row in live.items() if newest - row["time"] > silent_ms}
        fresh = sorted(ex for ex, row in live.items() if now - row["time"] <= 2 * self.interval_ms_)
        if fresh and self.predictor_ is not None:
            X = np.array([[_number(live[ex].get(f)) for f in self.predictor_.features_] for ex in fresh])
            start = time.perf_counter()
            scores, conf = self.predictor_.predict(X, fresh, [self.workload_] * len(fresh))
            self.predict_seconds_.append(time.perf_counter() - start)
            predictions.update({ex: (float(s), float(c), "model") for ex, s, c in zip(fresh, scores, conf)})
        return predictions, set(live)

    def _act(self, now: float) -> None:
        predictions, live = self._predictions(now)
        chosen = choose_holds({ex: p[:2] for ex, p in predictions.items()}, self.p_, live)
        for ex in chosen:
            score, confidence, why = predictions[ex]
            if self.mode_ == "hint":
                action = "hint"
                log.info("Wrangler would delay executor %s (%s: score %.3f, confidence %.3f > p %.2f)", ex, why,
                         score, confidence, self.p_)
            else:
                action = self._holds.hold(ex, 2 * self.interval_ms_, confidence, silent=why == "silent")
                (self._held.add if action in ("held", "renewed") else self._held.discard)(ex)
            self.decisions_.append({"time": now, "executorId": ex, "score": score, "confidence": confidence,
                                    "why": why, "action": action})
        for ex in sorted(self._held - set(chosen)):
            self._holds.release(ex)
            self._held.discard(ex)


def _number(value) -> float:
    return float("nan") if value is None else float(value)


def start(spark, **kwargs) -> Wrangler:
    """Start Wrangler's loop for ``spark`` (or return the one already running for its application).

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
            log.warning("Wrangler already runs for %s; returning that loop (stop() it to change settings)", app)
            return running
        _RUNNING[app] = Wrangler(spark, **kwargs).start()
        return _RUNNING[app]


def running(spark) -> Wrangler | None:
    """The loop started for ``spark``'s application, if any."""
    loop = _RUNNING.get(spark.sparkContext.applicationId)
    return None if loop is None or loop._stop.is_set() else loop
