"""Scaling advisor (USBA and IPSO, seed 002): how many executors a job should get, from runs at a few counts.

One flow, one module per step; none imports Spark:

1. **report** (:mod:`.runs`): :func:`load_runs` reads one job's runs (its job group, or whole applications)
   from sparkrm telemetry files or Spark event logs in every form Spark writes (rolling folders, each codec,
   decoded by Spark's own readers, :mod:`.event_logs`): task slots, tasks and wall time of each, each
   application once (matched by its Spark application id) whichever of its files were named;
2. **fit** (:mod:`.models`): :class:`Usba` regresses run time on ln(N/m), m and N (thesis eq. 3.14-3.16);
   :class:`Ipso` splits it into serial, parallel and scale-out overhead parts and names the scaling type;
   :class:`Waves` (ours) counts the task waves of the job's stages, the steps USBA's ln(N/m) smooths over;
3. **predict**: each model predicts every run from the others (:func:`holdout_errors`);
4. **recommend** (:mod:`.recommend`): :func:`recommend` picks the slots for the fastest run, or the cheapest
   within a margin of it, by the model that predicted the held-out runs best.

``python -m spark_plugin.advisor FILE...`` prints the same, with ``--plot`` a picture of measured and fitted
speedups.
"""

from .models import Ipso, Usba, Waves
from .recommend import Advice, holdout_errors, recommend
from .runs import Run, RunSet, collect_runs, collect_runs_of, load_run, load_runs

__all__ = ["Advice", "Ipso", "Run", "RunSet", "Usba", "Waves", "collect_runs", "collect_runs_of", "holdout_errors",
           "load_run", "load_runs", "recommend"]
