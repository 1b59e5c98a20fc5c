"""VideoStorm's utility of a job's quality and lag (Eq. 2.1): how much a job's outcome is worth.

``U(Q, L) = base + alpha_quality * (Q - min_quality)+ - alpha_lag * (L - max_lag)+``

Quality below the floor earns nothing above the base, lag below the limit earns no bonus, and lag past
it costs in proportion. For training and approximate-query jobs, Q is the accuracy (or the fraction of
the goal) reached and L how far past its deadline the job finishes, so one template states "at least
this good, by then". :data:`TEMPLATES` holds the authors' nine suggested goals (minimum quality 40, 60
or 80% by a lag limit of 1, 10 or 60 minutes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Utility:
    """A job's utility of its quality and lag.

    Parameters
    ----------
    min_quality : float, default=0.0
        Q^M: quality that earns nothing above the base (a fraction, 0 to 1).
    max_lag_s : float, default=inf
        L^M: lag (seconds) past which each further second costs ``alpha_lag``.
    alpha_quality, alpha_lag : float, default=1.0
        Weights of quality above the floor and of lag past the limit (>= 0): a job's priority.
    base : float, default=0.0
        U^B: utility at the floor and within the lag limit.
    """

    min_quality: float = 0.0
    max_lag_s: float = math.inf
    alpha_quality: float = 1.0
    alpha_lag: float = 1.0
    base: float = 0.0

    def __post_init__(self):
        for name in ("min_quality", "max_lag_s", "alpha_quality", "alpha_lag", "base"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or math.isnan(value):
                raise ValueError(f"Utility {name} must be a number. Got {value!r}.")
        if not 0 <= self.min_quality <= 1:
            raise ValueError(f"Utility min_quality must be a fraction in [0, 1]. Got {self.min_quality!r}.")
        if self.max_lag_s < 0 or self.alpha_quality < 0 or self.alpha_lag < 0:
            raise ValueError("Utility max_lag_s, alpha_quality and alpha_lag must be >= 0. Got "
                             f"{self.max_lag_s!r}, {self.alpha_quality!r}, {self.alpha_lag!r}.")

    def __call__(self, quality, lag_s=0.0):
        """Utility of ``quality`` reached with ``lag_s`` of lag (scalars or arrays, broadcast).

        >>> Utility(min_quality=0.6, max_lag_s=60)(0.8, 90)   # 0.2 above the floor, 30 s late
        -29.8
        """
        q = np.maximum(np.asarray(quality, dtype=float) - self.min_quality, 0.0)
        late = np.maximum(np.asarray(lag_s, dtype=float) - self.max_lag_s, 0.0) if math.isfinite(self.max_lag_s) \
            else np.zeros_like(np.asarray(lag_s, dtype=float))
        value = self.base + self.alpha_quality * q - self.alpha_lag * late
        return float(value) if np.ndim(value) == 0 else value


#: The authors' nine templates: minimum quality {40, 60, 80}% x maximum lag {1, 10, 60} minutes.
TEMPLATES = {f"q{int(q * 100)}-lag{lag // 60}m": Utility(min_quality=q, max_lag_s=float(lag))
             for q in (0.4, 0.6, 0.8) for lag in (60, 600, 3600)}
