"""Hyperband as a pure oracle: bracket maths, sampling, and successive halving that keeps the best.

Standard Hyperband (Li et al., JMLR 2017), which the Repack thesis runs with
R = 81 and eta = 3 (thesis L580; spec 6.1). With ``s_max = floor(log_eta R)``
and ``B = (s_max + 1) R``, bracket ``s`` samples ``n = ceil(B/R * eta^s/(s+1))``
configurations; rung ``i`` trains ``n_i = floor(n eta^-i)`` of them to
``r_i = R eta^(i-s)`` epochs and keeps the best ``floor(n_i / eta)``. The
author's public code keeps the *worst* ones (it sorts accuracies ascending);
this oracle keeps the best.

The oracle decides what to train next and touches no model; the Keras tuner
(:mod:`tf_packing.tuner`) trains each rung, packed, and reports scores. This
module imports no TensorFlow.
"""

from __future__ import annotations

import logging
import math
import random
from dataclasses import asdict, dataclass, field
from fractions import Fraction

from spark_plugin.arguments import whole_number

from .hyperparameters import HyperParameters

__all__ = ["TABLE_2_3", "HyperbandOracle", "Rung", "Trial", "bracket_rungs", "bracket_size", "check_budget",
           "max_bracket", "rung_epochs", "search_space_size"]

log = logging.getLogger(__name__)

#: The thesis's search space (Table 2.3, 1056 configurations), with Keras optimizer names
#: ("momentum" is SGD with momentum).
TABLE_2_3 = {"batch_size": [20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70],
             "optimizer": ["adam", "sgd", "adagrad", "momentum"],
             "learning_rate": [0.000001, 0.00001, 0.0001, 0.001, 0.01, 0.1],
             "activation": ["sigmoid", "leaky_relu", "tanh", "relu"]}


#: The largest R: one Hyperband iteration trains about ``R * (log_eta R + 1)^2`` epochs.
MAX_EPOCHS = 10_000
#: The largest eta: a larger one than R leaves one bracket, plain training of every configuration.
MAX_FACTOR = 100


def check_budget(max_epochs, factor) -> None:
    """Refuse an R or an eta Hyperband cannot run (the one check of both: the oracle's and the tuner's)."""
    whole_number(max_epochs, what="max_epochs (R)", low=1, high=MAX_EPOCHS, fix="The thesis uses R=81.")
    whole_number(factor, what="factor (eta)", low=2, high=MAX_FACTOR, fix="The thesis uses eta=3.")


def max_bracket(max_epochs: int, factor: int) -> int:
    """``s_max = floor(log_eta R)``, in exact integer arithmetic (``log_3 81`` is 3.9999... in floats)."""
    check_budget(max_epochs, factor)
    s = 0
    while factor ** (s + 1) <= max_epochs:
        s += 1
    return s


def bracket_size(s: int, max_epochs: int, factor: int) -> int:
    """Configurations sampled by bracket ``s``: ``ceil((s_max + 1) eta^s / (s + 1))``."""
    s_max = max_bracket(max_epochs, factor)
    return -(-((s_max + 1) * factor ** s) // (s + 1))


def rung_epochs(s: int, i: int, max_epochs: int, factor: int) -> int:
    """Epochs of rung ``i`` of bracket ``s``: ``R eta^(i-s)``, rounded up to a whole epoch."""
    return max(1, math.ceil(Fraction(max_epochs) * Fraction(factor) ** (i - s)))


def bracket_rungs(s: int, max_epochs: int, factor: int) -> list:
    """``[(n_i, r_i), ...]`` for bracket ``s``: configurations and epochs of each rung.

    Examples
    --------
    >>> bracket_rungs(3, 81, 3)
    [(34, 3), (11, 9), (3, 27), (1, 81)]
    """
    n = bracket_size(s, max_epochs, factor)
    return [(n // factor ** i, rung_epochs(s, i, max_epochs, factor)) for i in range(s + 1)]


def search_space_size(space) -> int | None:
    """Configurations in the cross product of ``space`` (1056 for thesis Table 2.3); None for a continuous one."""
    return HyperParameters.of(space).size()


@dataclass
class Trial:
    """One sampled configuration and what it has been trained to.

    Attributes
    ----------
    scores : list of [int, float]
        ``[epochs, score]`` after each rung it took part in.
    status : str
        ``"running"``, ``"stopped"`` (not promoted), ``"killed"`` (early kill) or ``"completed"``.
    """

    trial_id: int
    config: dict
    bracket: int
    epochs_done: int = 0
    scores: list = field(default_factory=list)
    status: str = "running"

    @property
    def score(self):
        """The latest score, or None before the first rung ends."""
        return self.scores[-1][1] if self.scores else None


@dataclass
class Rung:
    """The next unit of work: train every trial to ``epochs`` (from its ``epochs_done``)."""

    bracket: int
    index: int
    epochs: int
    trials: list


class HyperbandOracle:
    """Decide which configurations train next, for how long, and which survive.

    Parameters
    ----------
    search_space : HyperParameters or dict of str to list, optional
        The space (:class:`~tf_packing.tuner.hyperparameters.HyperParameters`), or
        each hyper-parameter's values in order (numeric lists ascending, as in
        thesis Table 2.3), whose cross product is the space. Leave it out for an
        oracle passed to a :class:`~tf_packing.Tuner` (``oracle=``), which gives
        it the space ``build_fn`` registers (:meth:`update_space`), as Keras
        Tuner's tuners do with the oracle their users pass.
    max_epochs : int, default=81
        R, the most epochs any configuration trains for.
    factor : int, default=3
        eta, the fraction kept at each rung is ``1/eta``.
    mode : {"max", "min"}, default="max"
        Whether a higher score (accuracy) or a lower one (loss) is better.
    seed : int, default=0
        Seed of configuration sampling.

    Attributes
    ----------
    trials_ : dict of int to Trial
        Every trial sampled so far.

    Examples
    --------
    >>> oracle = HyperbandOracle({"lr": [0.1, 0.01]}, max_epochs=3, factor=3, seed=0)
    >>> rung = oracle.next_rung()
    >>> (rung.bracket, rung.epochs, len(rung.trials))
    (1, 1, 2)
    """

    def __init__(self, search_space: dict | None = None, *, max_epochs: int = 81, factor: int = 3,
                 mode: str = "max", seed: int = 0):
        check_budget(max_epochs, factor)
        if mode not in ("max", "min"):
            raise ValueError(f"mode must be 'max' (accuracy) or 'min' (loss). Got {mode!r}.")
        self.space = None
        if search_space is not None:
            self.update_space(search_space)
        self.max_epochs, self.factor, self.mode, self.seed = max_epochs, factor, mode, seed
        self.trials_ = {}
        self._rng = random.Random(seed)
        self._bracket = max_bracket(max_epochs, factor)  # brackets run from s_max down to 0
        self._rung = 0
        self._current = []  # trial ids of the current rung

    # -- protocol -------------------------------------------------------------------------
    def update_space(self, search_space) -> None:
        """Set the space configurations are sampled from (Keras Tuner's name for the tuner's call)."""
        space = HyperParameters.of(search_space)
        if not space.space:
            raise ValueError("the search space is empty: build_fn registered no hyper-parameter (hp.Choice, "
                             "hp.Int, hp.Float ...) and no search_space was given.")
        self.space = space

    def next_rung(self) -> Rung | None:
        """The next rung to train, or None when every bracket is done."""
        if self.space is None:
            raise ValueError("this HyperbandOracle has no search space: pass search_space=, or pass the oracle to "
                             "a Tuner (Tuner(build_fn, oracle=oracle)), which gives it build_fn's space.")
        if self._bracket < 0:
            return None
        if self._rung == 0 and not self._current:
            self._current = [t.trial_id for t in self._sample(bracket_size(self._bracket, self.max_epochs,
                                                                             self.factor))]
        epochs = rung_epochs(self._bracket, self._rung, self.max_epochs, self.factor)
        return Rung(self._bracket, self._rung, epochs, [self.trials_[i] for i in self._current])

    def end_rung(self, scores: dict, killed=()) -> list:
        """Record the scores of the current rung and keep the best ``floor(n_i/eta)`` trials.

        Parameters
        ----------
        scores : dict of int to float
            Score of every trial of the rung, by trial id.
        killed : iterable of int
            Trials stopped early inside the rung: never promoted.

        Returns
        -------
        list of int
            The trial ids promoted to the next rung (empty after the last rung).
        """
        rung = self.next_rung()
        missing = [t.trial_id for t in rung.trials if t.trial_id not in scores]
        if missing:
            raise ValueError(f"end_rung needs a score for every trial of the rung; missing {missing}. "
                             "Report a worst-case score for trials that failed.")
        killed = set(killed)
        for trial in rung.trials:
            trial.epochs_done = rung.epochs
            trial.scores.append([rung.epochs, float(scores[trial.trial_id])])
            trial.status = "killed" if trial.trial_id in killed else "stopped"
        last = self._rung == self._bracket
        keep = 0 if last else len(rung.trials) // self.factor
        alive = [t for t in rung.trials if t.trial_id not in killed]
        best = sorted(alive, key=self._key)[:keep]
        for trial in best:
            trial.status = "running"
        if last:
            for trial in alive:
                trial.status = "completed"
        log.info("bracket %d rung %d: %d trials at %d epochs, kept %s", rung.bracket, rung.index,
                 len(rung.trials), rung.epochs, [t.trial_id for t in best])
        if last or not best:
            self._bracket, self._rung, self._current = self._bracket - 1, 0, []
        else:
            self._rung, self._current = self._rung + 1, [t.trial_id for t in best]
        return [t.trial_id for t in best]

    def best_trial(self) -> Trial | None:
        """The trial with the best final-rung score, over every bracket (None before any score)."""
        scored = [t for t in self.trials_.values() if t.scores and t.status != "killed"]
        return min(scored, key=self._key) if scored else None

    # -- state ----------------------------------------------------------------------------
    def get_state(self) -> dict:
        """Plain-data state (JSON-serialisable) from which :meth:`set_state` resumes the search."""
        return {"trials": [asdict(t) for t in self.trials_.values()], "bracket": self._bracket,
                "rung": self._rung, "current": list(self._current), "rng": list(self._rng.getstate()[1]),
                "rng_version": self._rng.getstate()[0]}

    def set_state(self, state: dict) -> None:
        """Restore a state from :meth:`get_state`."""
        self.trials_ = {t["trial_id"]: Trial(**t) for t in state["trials"]}
        self._bracket, self._rung, self._current = state["bracket"], state["rung"], list(state["current"])
        self._rng.setstate((state["rng_version"], tuple(state["rng"]), None))

    # -- helpers --------------------------------------------------------------------------
    def _key(self, trial):
        return (-trial.score if self.mode == "max" else trial.score, trial.trial_id)

    def _sample(self, n: int) -> list:
        """Sample ``n`` distinct configurations (all of them when the space is smaller)."""
        total = self.space.size()
        if total is not None:  # a finite cross product: without replacement, by flat index
            if n > total:
                log.warning("bracket %d wants %d configurations but the search space holds %d; using all of "
                            "them", self._bracket, n, total)
                n = total
            configs = [self.space.config_at(flat) for flat in self._rng.sample(range(total), n)]
        else:
            configs = self._draw_distinct(n)
        trials = []
        for config in configs:
            trial = Trial(len(self.trials_), config, self._bracket)
            self.trials_[trial.trial_id] = trial
            trials.append(trial)
        return trials

    def _draw_distinct(self, n: int, tries_per_config: int = 50) -> list:
        """``n`` random configurations, repeats redrawn (a mostly discrete space may hold fewer than ``n``)."""
        configs, seen = [], set()
        for _ in range(n * tries_per_config):
            config = self.space.sample(self._rng)
            key = repr(sorted(config.items()))
            if key not in seen:
                seen.add(key)
                configs.append(config)
                if len(configs) == n:
                    break
        if len(configs) < n:
            log.warning("bracket %d wants %d configurations but only %d distinct ones were drawn in %d tries",
                        self._bracket, n, len(configs), n * tries_per_config)
        return configs
