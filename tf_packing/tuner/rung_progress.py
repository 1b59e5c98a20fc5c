"""Progress inside a rung: each trial's checkpoint and scores at the last epoch it finished.

The project folder holds the search as of the last finished rung. While a rung trains,
every member writes ``partial/trial_<id>.npz`` (weights, optimizer state, epochs done)
and ``partial/trial_<id>.json`` (the scores and trace rows it recorded in this rung,
whether it was killed) at each of its epoch ends, from whichever process trains it (the
tuner's own, or a Spark task writing to the shared folder). A search stopped mid-rung
resumes each trial from there: the rung's packs are formed as before, members start at
the epoch they reached (with that epoch's data order, so they end as an uninterrupted
search would), and trials that had finished the rung are not trained again. The files go
when the rung ends and the project is saved.

The checkpoint is written before the JSON, each atomically; a JSON whose epoch count does
not match its checkpoint (a stop between the two writes) is ignored, and that trial
trains its rung from the start. The folder is a :data:`PARTIAL` (:mod:`spark_plugin.ownership`),
claimed by the tuner's own process before each rung (the members, maybe Spark tasks at once, only
add files to it) and removed only while it holds nothing else. This module imports no TensorFlow.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from spark_plugin.ownership import FolderKind

from ..repack import MemberCheckpoint, read_checkpoint as read, save_checkpoint as save

__all__ = ["PARTIAL", "Progress", "RungProgress"]

log = logging.getLogger(__name__)

#: The ``partial/`` folder: each trial's checkpoint and JSON, and their temporary files while written.
PARTIAL = FolderKind("tf_packing rung progress", ("trial_*",))


@dataclass
class Progress:
    """One trial's state at the last epoch it finished in the rung under way."""

    checkpoint: MemberCheckpoint
    scores: list  # scores recorded in this rung, in order
    trace: list  # their (seconds, trial id, score) rows
    killed: bool


class RungProgress:
    """The ``partial/`` folder of a project: begin a rung, write a trial's progress, read all of it, clear it."""

    def __init__(self, folder):
        self.folder = Path(folder)

    def _files(self, trial_id: int) -> tuple[Path, Path]:
        return self.folder / f"trial_{trial_id}.npz", self.folder / f"trial_{trial_id}.json"

    def begin(self) -> None:
        """Claim the folder before a rung's members write to it (in one process: they may write at once)."""
        PARTIAL.claim(self.folder)

    def write(self, trial_id: int, checkpoint: MemberCheckpoint, scores, trace, killed: bool) -> None:
        """Record a trial's progress, into the folder :meth:`begin` claimed."""
        npz, meta = self._files(trial_id)
        save(checkpoint, npz)
        tmp = meta.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"epochs": checkpoint.epochs_done, "scores": list(scores),
                                   "trace": [list(row) for row in trace], "killed": bool(killed)}))
        os.replace(tmp, meta)

    def read(self) -> dict:
        """``{trial id: Progress}`` of every trial with consistent files."""
        progress = {}
        for meta in sorted(self.folder.glob("trial_*.json")) if self.folder.exists() else ():
            trial_id = int(meta.stem.removeprefix("trial_"))
            npz = self._files(trial_id)[0]
            try:
                record, checkpoint = json.loads(meta.read_text()), read(npz)
            except (OSError, ValueError, KeyError) as e:
                log.warning("ignoring %s (%s): trial %d trains its rung from the start", meta, e, trial_id)
                continue
            if record["epochs"] != checkpoint.epochs_done:
                log.warning("ignoring %s: it records %d epochs, its checkpoint %d (stopped between the two "
                            "writes); trial %d trains its rung from the start", meta, record["epochs"],
                            checkpoint.epochs_done, trial_id)
                continue
            progress[trial_id] = Progress(checkpoint, record["scores"], [tuple(r) for r in record["trace"]],
                                          record["killed"])
        return progress

    def clear(self) -> None:
        PARTIAL.remove(self.folder)
