"""Each trial's curve of scores, the search's trace, and the kill and target decisions taken from them.

The tuner keeps one :class:`Scorekeeper` for the whole search. A pack trained in a
Spark task keeps its own, started from what the driver knew when the rung began
(the trials' curves and the best score so far), and sends back what it recorded;
the driver then merges it with :meth:`Scorekeeper.merge`. Both sides therefore
decide kills and the target by the same rule. This module imports no TensorFlow.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

__all__ = ["Scorekeeper", "TargetReached"]

log = logging.getLogger(__name__)


class TargetReached(Exception):
    """Raised out of a pack's fit when a trial reaches the tuner's ``target``: the search is over."""


@dataclass
class Scorekeeper:
    """Scores by trial, the trace over the search, and which trials were killed.

    Parameters
    ----------
    objective : Objective
        The score's log name and direction.
    max_epochs : int
        Hyperband's R (the kill rule weighs the epochs a trial has left).
    clock : callable
        Seconds into the search, for the trace.
    early_kill : KillRule or HyperDrive, optional
    target : float, optional
    prior_best : float, optional
        The best score recorded before this keeper started (a task's keeper: the search's best so far).
    best_epoch : bool, default=False
        A trial's score in a rung is its best epoch's in that rung (Keras Tuner's), not its last.

    Attributes
    ----------
    curves : dict of int to list of float
        Every score of each trial, one per scoring (epoch ends, or rung ends).
    trace : list of (float, int, float)
        ``(seconds into the search, trial id, score)`` of every score recorded.
    scores : dict of int to float
        The latest score of each trial of the current rung (the worst score for NaN).
    killed : set of int
        Trials the early-kill rule stopped in the current rung.
    labels : dict of int to str
        HyperDrive's class of each trial ("promising", "opportunistic", "poor").
    target_reached : (int, float) or None
        The trial that reached ``target`` and when.
    """

    objective: object
    max_epochs: int
    clock: object
    early_kill: object = None
    target: float | None = None
    prior_best: float | None = None
    best_epoch: bool = False
    curves: dict = field(default_factory=dict)
    trace: list = field(default_factory=list)
    scores: dict = field(default_factory=dict)
    killed: set = field(default_factory=set)
    labels: dict = field(default_factory=dict)
    target_reached: tuple | None = None

    def start_rung(self) -> None:
        """Forget the last rung's scores and kills (curves, trace and labels stay)."""
        self.scores, self.killed = {}, set()

    def record(self, trial, logs: dict) -> bool:
        """Record a trial's epoch-end score; True when the trial is to stop here (killed).

        Raises :class:`TargetReached` when the score reaches the target.
        """
        name = self.objective.name
        if name not in logs:
            if name.startswith("val_") and not any(k.startswith("val_") for k in logs):
                return False  # a training-only epoch end (scored at the member's end)
            raise ValueError(f"objective {name!r} is not among the model's logs {sorted(logs)}. Compile the "
                             f"model in build_fn with the metric it names (metrics=[{name.removeprefix('val_')!r}]).")
        score = float(logs[name])
        curve = self.curves.setdefault(trial.trial_id, [])
        curve.append(score)
        self.trace.append((self.clock(), trial.trial_id, score))
        if not math.isfinite(score):
            log.warning("trial %d scored %s=%s after %d epochs; it ranks last", trial.trial_id, name, score,
                        len(curve))
        self.rank(trial.trial_id, score)
        if self.target is not None and math.isfinite(score) and not self.objective.better(self.target, score):
            self.target_reached = (trial.trial_id, self.trace[-1][0])
            trial.scores.append([len(curve), score])
            log.info("trial %d reached the target %s=%s after %.1f s", trial.trial_id, name, score,
                     self.target_reached[1])
            raise TargetReached()
        rule = self.early_kill
        if rule is None or not rule.should_kill(curve, epochs_left=self.max_epochs - len(curve),
                                                best=self.reference()):
            return False
        self.killed.add(trial.trial_id)
        self.labels[trial.trial_id] = "poor"
        log.info("early kill: trial %d at %s=%.4f after %d epochs", trial.trial_id, name, score, len(curve))
        return True

    def rank(self, trial_id: int, score: float) -> None:
        """Set the trial's score in this rung from a new one: the latest, or the best with ``best_epoch``."""
        score = score if math.isfinite(score) else self.objective.worst
        kept = self.scores.get(trial_id)
        if self.best_epoch and kept is not None and not self.objective.better(score, kept):
            return
        self.scores[trial_id] = score

    def reference(self):
        """The score a trial must reach to be worth training: the target, else the best so far."""
        if self.target is not None:
            return self.target
        finite = [s for _, _, s in self.trace if math.isfinite(s)]
        if self.prior_best is not None:
            finite.append(self.prior_best)
        if not finite:
            return None
        return max(finite) if self.objective.direction == "max" else min(finite)

    def forget(self, trial) -> None:
        """Drop what ``trial`` recorded in this rung (its pack is trained again, e.g. after running out of memory)."""
        self.scores.pop(trial.trial_id, None)
        self.killed.discard(trial.trial_id)
        del self.curves[trial.trial_id][trial.epochs_done:]

    def for_task(self, trials, clock) -> Scorekeeper:
        """A keeper for one pack trained elsewhere: these trials' curves, the best score so far, no trace."""
        return Scorekeeper(self.objective, self.max_epochs, clock, self.early_kill, self.target,
                           prior_best=self.reference(), best_epoch=self.best_epoch,
                           curves={t.trial_id: list(self.curves.get(t.trial_id, [])) for t in trials},
                           labels={t.trial_id: self.labels[t.trial_id] for t in trials if t.trial_id in self.labels})

    def merge(self, task: Scorekeeper) -> None:
        """Take in what a task's keeper recorded: its trials' curves, scores, kills, labels and trace rows."""
        self.curves.update(task.curves)
        self.scores.update(task.scores)
        self.killed |= task.killed
        self.labels.update(task.labels)
        self.trace.extend(task.trace)
        self.trace.sort(key=lambda row: row[0])
        if task.target_reached is not None and (self.target_reached is None
                                                or task.target_reached[1] < self.target_reached[1]):
            self.target_reached = task.target_reached  # the earliest of the rung's tasks
