"""One utility allocator for every arbiter: VideoStorm's decision layer (seed 000, ch. 2), pure Python.

SLAQ, Rotary's arbiter and any arbiter to come divide units (cores, slots) by one rule: each job states
what each count of units is worth to it, and one allocator hands the units out. One module per step:

1. **report** -> :class:`Claim` (:mod:`.allocator`): a job's utility for each count of units (a curve or a
   table), the most units it can use, and the memory its first unit needs;
2. **normalize** -> :class:`Utility` (:mod:`.templates`): VideoStorm's utility, a base plus a reward for
   quality above a floor minus a penalty for lag (or lateness) past a limit, so that jobs with different
   goals compare; :data:`TEMPLATES` are its nine suggested goals;
3. **predict** (:mod:`.mpc`): the lag a job will have after a short horizon with a given allocation, and
   :class:`DemandCorrection`, the running ratio of actual to predicted demand that corrects it;
4. **allocate** (:mod:`.allocator`): :func:`allocate`, greedy max-sum (the largest gain in utility first)
   or max-min (the job of lowest utility first).

None of these import Spark. SLAQ's Objectives A and B are max-sum and max-min over its predicted loss
curves (:mod:`spark_plugin.slaq.allocator`); Rotary's policies are orders of jobs, which
:func:`by_priority` turns into utilities (:mod:`spark_plugin.rotary.policies`)::

    from spark_plugin.shared.utility import Claim, allocate
    allocate([Claim("etl", [0, 5, 9, 12]), Claim("report", [0, 4, 5, 5])], capacity=4)   # {'etl': 3, 'report': 1}
"""

from .allocator import OBJECTIVES, Claim, allocate, by_priority
from .mpc import DemandCorrection, predicted_lag
from .templates import TEMPLATES, Utility

__all__ = ["OBJECTIVES", "TEMPLATES", "Claim", "DemandCorrection", "Utility", "allocate", "by_priority",
           "predicted_lag"]
