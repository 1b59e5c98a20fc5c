"""How a progressive answer converged: each aggregate's estimate and interval over time, against the exact one.

One panel per aggregate (at most :data:`MAX_AGGREGATES`), one line per group (the first :data:`MAX_GROUPS`
groups of the last snapshot, in its order): the estimate after each snapshot, its interval as a band, and
the exact value as a dashed line of the same colour when the run reached it. A group that appears only
after some batches starts where it appears. Running values (MIN, MAX, COUNT DISTINCT) have no band.
"""

from __future__ import annotations

from pathlib import Path

from ..ownership import PLOT, save_figure

MAX_AGGREGATES = 4
MAX_GROUPS = 5


def convergence_plot(snapshots, aggregates, path, what: str | None = None) -> Path:
    """Draw ``snapshots`` (:class:`.engine.Snapshot`, in order) of a query whose estimated columns are
    ``aggregates`` into the PNG image ``path``: a new file (its folder created) or a plot sparkrm saved
    before, never another file (:func:`spark_plugin.ownership.save_figure`; ``what`` names the argument)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    PLOT.check_writable(path, what=what)  # before drawing
    if not snapshots:
        raise ValueError("no snapshot to plot: the query stopped before its first batch")
    last = snapshots[-1]
    shown = [a for a in last.result.columns if a in aggregates][:MAX_AGGREGATES]
    if not shown:
        raise ValueError("nothing to plot: the query has no estimated aggregate (it ran exactly)")
    keys = [c for c in last.result.columns if c not in aggregates]
    groups = [tuple(row) for row in last.result[keys].head(MAX_GROUPS).itertuples(index=False, name=None)]
    figure, axes = plt.subplots(len(shown), 1, figsize=(9, 2.6 * len(shown)), squeeze=False, sharex=True)
    for axis, aggregate in zip(axes[:, 0], shown):
        for i, group in enumerate(groups):
            times, values, lows, highs = [], [], [], []
            for snapshot in snapshots:
                row = _row(snapshot.result, keys, group)
                if row is None:
                    continue
                value = float(snapshot.result[aggregate].iloc[row])
                half = (float(snapshot.ci[aggregate].iloc[row])
                        if aggregate in snapshot.ci.columns and not snapshot.final else 0.0)  # NaN: no interval
                times.append(snapshot.elapsed_s)
                values.append(value)
                lows.append(value - half)
                highs.append(value + half)
            colour = f"C{i}"
            label = ", ".join(str(k) for k in group) or "all rows"
            # an answer holds from its snapshot until the next one: steps, not lines between snapshots
            axis.plot(times, values, "o-", color=colour, markersize=3, label=label, drawstyle="steps-post")
            axis.fill_between(times, lows, highs, color=colour, alpha=0.15, linewidth=0, step="post")
            if last.final and values:
                axis.axhline(values[-1], color=colour, linestyle="--", linewidth=0.8)
        axis.set_ylabel(str(aggregate))
        axis.grid(alpha=0.3)
    axes[0, 0].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1), title=", ".join(keys) or None)
    axes[-1, 0].set_xlabel("seconds")
    ending = ("dashed: the exact answer" if last.final
              else f"stopped at batch {last.batch}/{last.batches}, before the exact answer")
    figure.suptitle(f"estimates and {last.confidence:.0%} intervals per snapshot; {ending}", fontsize="medium")
    figure.tight_layout()
    try:
        return save_figure(figure, path, what=what, dpi=110)
    finally:
        plt.close(figure)


def _row(result, keys, group):
    """The position of ``group``'s row in ``result`` (None when the group is not there yet)."""
    if not keys:
        return 0 if len(result) else None
    rows = result[keys].itertuples(index=False, name=None)
    return next((i for i, row in enumerate(rows) if row == group), None)
