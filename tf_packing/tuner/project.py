"""A tuner's project folder: the oracle's state and the trials' checkpoints, so a search can resume.

``<directory>/<project_name>/`` holds ``tuner.json`` (the oracle's state, each
trial's curve, the elapsed search time and the settings the state belongs to)
and ``checkpoints/trial_<id>.npz`` (the weights and optimizer state of every
trial that may still train or be returned). Both are written at every rung end,
each file atomically, so a search stopped at any point resumes from the last
finished rung; inside the rung under way, each trial resumes from the last epoch
it finished (``partial/``, see :mod:`tf_packing.tuner.rung_progress`).

A project written under other settings (another ``max_epochs``, ``factor``,
objective or seed), by another ``build_fn`` or over another search space is not
resumed: the error names the folder, what differs and the fix (another
``project_name``, or ``overwrite=True``). ``tuner.json`` records the search
space as declared (each hyper-parameter's kind, range or values and conditions)
and the identity of ``build_fn``: its module and qualified name, and a hash of
its source when :func:`inspect.getsource` can read it (a function typed into an
interactive session has none; its name alone is then compared). A folder written
before these were recorded is resumed with a warning that they could not be
checked; its next save records them.

The folder is sparkrm's own (:mod:`spark_plugin.ownership`): it carries the marker of a
:data:`PROJECT` and nothing but a project's entries, so ``overwrite=True`` deletes only a
project sparkrm wrote. A ``directory`` that is a file, a project folder holding the user's files,
or one written by a tf_packing that did not mark its folders is refused in one line
(:class:`~spark_plugin.errors.NotOursError`), and nothing in it is touched.

What the identity cannot see: a ``build_fn`` whose behaviour depends on
something outside its source (a closure's variables, a global, a
``HyperModel``'s constructor arguments) looks the same with other values.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import os
from pathlib import Path

from spark_plugin.errors import NotOursError, UsageError
from spark_plugin.ownership import MARKER, FolderKind

from ..repack import read_checkpoint as read, save_checkpoint as save

__all__ = ["PROJECT", "Project", "build_fn_identity", "project_folder"]

log = logging.getLogger(__name__)

#: A tuner's project folder: its state, the trials' checkpoints, the progress of the rung under way
#: (:mod:`.rung_progress`) and the files the executors read (:mod:`.spark_packs`).
PROJECT = FolderKind("tf_packing tuner project", ("tuner.json", "tuner.json.tmp", "checkpoints", "partial",
                                                  "executors"))


def project_folder(directory, project_name) -> Path | None:
    """``directory/project_name`` once a tuner may write there (None when ``directory`` is None).

    Called where the arguments enter, before any model is built, and again by :class:`Project`:
    one line names the argument, what is in the way and the fix."""
    if directory is None:
        return None
    if not isinstance(project_name, str) or project_name in ("", ".", "..") or Path(project_name).name != project_name:
        raise UsageError(f"Tuner's project_name must be the name of a folder inside directory. Got {project_name!r}. "
                         "Pass e.g. 'tuner'.")
    directory = Path(directory).expanduser()
    if directory.exists() and not directory.is_dir():
        raise NotOursError(f"Tuner's directory {directory} is a file, not a folder: the search keeps its state in "
                           "directory/project_name. Pass a folder (created if missing).")
    path = directory / project_name
    if (path / "tuner.json").is_file() and not (path / MARKER).exists():
        raise NotOursError(f"{path} holds a tuner project written by a tf_packing that did not mark its folders "
                           f"({MARKER}), so sparkrm cannot tell it holds nothing of yours: delete the folder, or "
                           "pass another project_name.")
    return PROJECT.check_writable(path, what="Tuner's directory/project_name")


class Project:
    """One search's folder (or nothing at all when ``directory`` is None).

    Parameters
    ----------
    directory : str or Path or None
        The folder of projects; None keeps nothing on disk.
    project_name : str
        This search's sub-folder.
    settings : dict
        Values (JSON) the saved state belongs to, e.g. ``max_epochs``; a folder with others is refused.
    overwrite : bool, default=False
        Delete the folder first (only ever a :data:`PROJECT` sparkrm wrote).
    identity : dict, optional
        ``{"build_fn": build_fn_identity(fn), "search_space": space.describe()}``; a folder recording
        another is refused, one recording none (written before identities were recorded) is resumed with
        a warning. Default: nothing is checked or recorded.
    """

    def __init__(self, directory, project_name: str, settings: dict, *, overwrite: bool = False,
                 identity: dict | None = None):
        self.settings = settings
        self.identity = None if identity is None else _plain(identity)
        self.path = project_folder(directory, project_name)
        self._written = {}  # trial id -> (epochs, steps) of the checkpoint last written for it
        if self.path is not None:
            if overwrite:
                PROJECT.remove(self.path)
            PROJECT.claim(self.path)

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
        self._check_identity(saved.get("identity"))
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
        record = {"settings": self.settings, "state": state, "checkpoints": sorted(int(t) for t in checkpoints)}
        if self.identity is not None:
            record["identity"] = self.identity
        tmp.write_text(json.dumps(record, indent=1))
        os.replace(tmp, self._state_file)

    def _check_identity(self, saved) -> None:
        """Refuse a folder written by another ``build_fn`` or over another search space."""
        if self.identity is None:
            return
        if saved is None:
            log.warning("%s records no build_fn or search space (written by an older tf_packing): resuming it "
                        "without checking that they are the ones of this tuner; pass overwrite=True if not",
                        self.path)
            return
        fix = "Pass overwrite=True to start afresh, or another project_name."
        old, new = saved.get("build_fn") or {}, self.identity["build_fn"]
        if old.get("name") != new["name"]:
            raise ValueError(f"{self.path} holds a search by build_fn {old.get('name')}, not {new['name']}. {fix}")
        if old.get("source_sha256") and new["source_sha256"] and old["source_sha256"] != new["source_sha256"]:
            raise ValueError(f"{self.path} holds a search by another version of build_fn {new['name']} (its "
                             f"source changed since). {fix}")
        differences = _space_differences(saved.get("search_space") or {}, self.identity["search_space"])
        if differences:
            raise ValueError(f"{self.path} holds a search over another search space ({'; '.join(differences)}). "
                             f"{fix}")


def build_fn_identity(fn) -> dict:
    """``fn``'s module and qualified name, and the SHA-256 of its source (None when the source is unavailable).

    Works for functions, bound methods (``HyperModel.build``), ``functools.partial`` and callable objects:
    the last two are named by the function or class they wrap.
    """
    target = getattr(fn, "func", fn)  # functools.partial
    if not hasattr(target, "__qualname__"):
        target = type(target)  # a callable object: its class
    name = f"{getattr(target, '__module__', None) or '?'}.{target.__qualname__}"
    try:
        source = inspect.getsource(target)
    except (OSError, TypeError):  # typed into a REPL, built in, or a C extension
        source = None
    digest = None if source is None else hashlib.sha256(source.encode()).hexdigest()
    return {"name": name, "source_sha256": digest}


def _plain(value):
    """``value`` as it reads back from JSON (tuples become lists), so saved and fresh compare equal."""
    return json.loads(json.dumps(value, default=repr))


def _space_differences(old: dict, new: dict) -> list[str]:
    """What changed between two :meth:`HyperParameters.describe` results, one phrase per name."""
    changes = [f"{name!r} is new" for name in new if name not in old]
    changes += [f"{name!r} is gone" for name in old if name not in new]
    changes += [f"{name!r} was {_shown(old[name])}, is {_shown(new[name])}"
                for name in new if name in old and old[name] != new[name]]
    return changes


def _shown(entry: dict) -> str:
    """One hyper-parameter of :meth:`HyperParameters.describe` in words: ``int in [8, 32] step 8``."""
    kind = entry.get("kind")
    if kind in ("int", "float"):
        text = f"{kind} in [{entry.get('min_value')}, {entry.get('max_value')}]"
        text += f" step {entry['step']}" if entry.get("step") is not None else ""
        text += f" {entry['sampling']}" if entry.get("sampling", "linear") != "linear" else ""
    elif kind == "boolean":
        text = "boolean"
    else:
        text = f"{kind} of {entry.get('values')}"
    if entry.get("conditions"):
        text += " when " + " and ".join(f"{parent} in {values}" for parent, values in entry["conditions"])
    return text


def _version(ckpt) -> tuple:
    """A checkpoint's progress: it changes whenever the trial trains a step more."""
    return ckpt.epochs_done, len(ckpt.losses)
