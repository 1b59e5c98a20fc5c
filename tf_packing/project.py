"""A tuner's project folder: the oracle's state and the trials' checkpoints, so a search can resume.

``<directory>/<project_name>/`` holds ``tuner.json`` (the oracle's state, each
trial's curve, the elapsed search time and the settings the state belongs to)
and ``checkpoints/trial_<id>.npz`` (the weights and optimizer state of every
trial that may still train or be returned). Both are written at every rung end,
each file atomically, so a search stopped at any point resumes from the last
finished rung; the rung under way is trained again from its start.

A project written under other settings (another ``max_epochs``, ``factor``,
objective or seed) is not resumed: the error names the setting and the fix.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

from .checkpoint import read, save

__all__ = ["Project"]

log = logging.getLogger(__name__)


class Project:
    """One search's folder (or nothing at all when ``directory`` is None)."""

    def __init__(self, directory, project_name: str, settings: dict, *, overwrite: bool = False):
        self.settings = settings
        self.path = None if directory is None else Path(directory) / project_name
        self._written = {}  # trial id -> (epochs, steps) of the checkpoint last written for it
        if self.path is not None and overwrite and self.path.exists():
            shutil.rmtree(self.path)

    @property
    def _state_file(self) -> Path:
        return self.path / "tuner.json"

    def _checkpoint_file(self, trial_id: int) -> Path:
        return self.path / "checkpoints" / f"trial_{trial_id}.npz"

    def load(self):
        """``(state, checkpoints)`` of an earlier search with the same settings, or None."""
        if self.path is None or not self._state_file.exists():
            return None
        try:
            saved = json.loads(self._state_file.read_text())
        except (OSError, ValueError) as e:
            raise ValueError(f"{self._state_file} cannot be read ({e}). Delete it, or pass overwrite=True to start "
                             "the search afresh.") from e
        for key, value in self.settings.items():
            if saved["settings"].get(key) != value:
                raise ValueError(f"{self.path} holds a search with {key}={saved['settings'].get(key)!r}, not "
                                 f"{value!r}. Pass overwrite=True to start afresh, or another project_name.")
        checkpoints = {}
        for trial_id in saved["checkpoints"]:
            path = self._checkpoint_file(trial_id)
            if not path.exists():
                raise ValueError(f"{path} is missing: the project folder is incomplete. Pass overwrite=True to "
                                 "start the search afresh.")
            checkpoints[trial_id] = read(path)
            self._written[trial_id] = _version(checkpoints[trial_id])
        log.info("resuming the search in %s with %d checkpoints", self.path,
                 len(checkpoints))
        return saved["state"], checkpoints

    def save(self, state: dict, checkpoints: dict) -> None:
        """Write the state and every checkpoint in ``checkpoints``; delete the files of the others."""
        if self.path is None:
            return
        folder = self.path / "checkpoints"
        folder.mkdir(parents=True, exist_ok=True)
        keep = {self._checkpoint_file(t).name for t in checkpoints}
        for trial_id, ckpt in checkpoints.items():
            if self._written.get(trial_id) != _version(ckpt):  # a trial that trained since its last write
                save(ckpt, self._checkpoint_file(trial_id))
                self._written[trial_id] = _version(ckpt)
        for stale in folder.glob("trial_*.npz"):
            if stale.name not in keep:
                stale.unlink()
        tmp = self._state_file.with_suffix(".json.tmp")
        tmp.write_text(json.dumps({"settings": self.settings, "state": state,
                                   "checkpoints": sorted(int(t) for t in checkpoints)}, indent=1))
        os.replace(tmp, self._state_file)


def _version(ckpt) -> tuple:
    """A checkpoint's progress: it changes whenever the trial trains a step more."""
    return ckpt.epochs_done, len(ckpt.losses)
