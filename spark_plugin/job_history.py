"""How much work past Spark jobs of each *shape* took: what Yaq's gate and Pigeon's router predict from.

Yaq and Pigeon both start from one observation: most jobs recur (over 60% in Yaq's traces), and a
rough per-kind average predicts the next run well enough to order or route it. A job's *shape* names
what makes two jobs alike: a name the caller gives, a job group, or a SQL text with its literals
taken out (:func:`sql_shape`, so ``WHERE d < '1994-01-01'`` and ``WHERE d < '1995-01-01'`` share one).

Each finished job reports its task-seconds (the sum of its tasks' run times: the work, whatever the
contention it met) and its task count; the estimate is their exponentially weighted mean. The
history is plain JSON, so one driver's runs teach the next (``save``/``load``); it replaces only a
history file (:data:`HISTORY_FILE`), never another file of the user's. Pure Python.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import SparkrmError
from .ownership import FileKind


class HistoryFileError(SparkrmError):
    """A job-history file that cannot be read back (the message names the file and the fix)."""


@dataclass(frozen=True)
class Work:
    """A shape's estimated work: task-seconds and tasks per run, from ``runs`` finished runs."""

    task_s: float
    tasks: float
    runs: int

    def length_s(self, cores: int) -> float:
        """Seconds the job would take alone on ``cores`` slots if its work spread evenly."""
        return self.task_s / max(int(cores), 1)


_LITERALS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\b\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\b")


def sql_shape(sql: str) -> str:
    """The shape of a SQL text: lower-cased, literals replaced by ``?``, white space collapsed, hashed.

    >>> sql_shape("SELECT * FROM t WHERE d < '1994-01-01'") == sql_shape("select *  from t where d < '1995-02-01'")
    True
    """
    text = " ".join(_LITERALS.sub("?", sql).lower().split())
    return "sql-" + hashlib.sha1(text.encode()).hexdigest()[:12]


class JobHistory:
    """Work per shape, learned from finished jobs.

    Parameters
    ----------
    smoothing : float, default=0.3
        Weight of the newest run in the exponentially weighted mean.

    Examples
    --------
    >>> h = JobHistory(smoothing=0.5)
    >>> h.record("q6", task_s=4.0, tasks=8).record("q6", task_s=2.0, tasks=8).estimate("q6")
    Work(task_s=3.0, tasks=8.0, runs=2)
    >>> h.estimate("never-seen") is None
    True
    """

    def __init__(self, *, smoothing: float = 0.3):
        if not 0 < smoothing <= 1:
            raise ValueError(f"smoothing must be in (0, 1]. Got {smoothing!r}.")
        self.smoothing = smoothing
        self._shapes: dict[str, Work] = {}

    def record(self, shape: str, *, task_s: float, tasks: int) -> "JobHistory":
        """Learn one finished run of ``shape``."""
        if not (task_s >= 0 and tasks >= 0):
            raise ValueError(f"task_s and tasks must be >= 0. Got {task_s!r} and {tasks!r} for shape {shape!r}.")
        seen = self._shapes.get(shape)
        if seen is None:
            self._shapes[shape] = Work(float(task_s), float(tasks), 1)
        else:
            a = self.smoothing
            self._shapes[shape] = Work((1 - a) * seen.task_s + a * task_s, (1 - a) * seen.tasks + a * tasks,
                                       seen.runs + 1)
        return self

    def estimate(self, shape: str) -> Work | None:
        """``shape``'s estimated work, ``None`` before its first run."""
        return self._shapes.get(shape)

    def __len__(self) -> int:
        return len(self._shapes)

    def save(self, path, *, what: str | None = None) -> Path:
        """Write the history as JSON (atomically: a reader never sees half a file).

        Raises
        ------
        NotOursError
            When ``path`` is a folder or a file that is not a history (``what`` names the argument).
        """
        path = HISTORY_FILE.check_writable(path, what=what)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w") as f:
            json.dump({"smoothing": self.smoothing,
                       "shapes": {s: vars(w) for s, w in sorted(self._shapes.items())}}, f, indent=1)
        os.replace(tmp, path)
        return path

    @classmethod
    def load(cls, path) -> "JobHistory":
        """Read a history :meth:`save` wrote; a missing file is an empty history.

        Raises
        ------
        HistoryFileError
            When the path is a folder or a file that is not such a history.
        """
        path = Path(path)
        if not path.exists():
            return cls()
        try:
            data = json.loads(path.read_text())
            history = cls(smoothing=float(data["smoothing"]))
            history._shapes = {str(s): Work(float(w["task_s"]), float(w["tasks"]), int(w["runs"]))
                               for s, w in data["shapes"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise HistoryFileError(f"{path}: not a job history written by JobHistory.save "
                                   f"({' '.join(str(e).split())}). Choose another path, or move that file "
                                   f"away (an empty history starts where none is).") from None
        return history

    @classmethod
    def open(cls, path, *, what: str | None = None) -> "JobHistory":
        """The history kept at ``path``, once :meth:`save` may write there: read if present, else empty.

        Call it where the path enters (before any job runs): a folder, or a file that is not a history,
        is refused; a missing folder is created.

        Raises
        ------
        NotOursError
            When ``path`` cannot hold a history (``what`` names the argument).
        """
        return cls.load(HISTORY_FILE.check_writable(path, what=what))


def _is_history(path: Path) -> bool:
    try:
        JobHistory.load(path)
    except HistoryFileError:
        return False
    return True


#: A job-history file: replaced only when it reads back as a history.
HISTORY_FILE = FileKind("job history", _is_history, ".json")
