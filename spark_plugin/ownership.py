"""What sparkrm may delete or overwrite: only what it provably wrote.

Users point sparkrm at paths: a checkpoint folder, a layouts root, a tuner project, a plot. A path that
already holds something of theirs (a thesis, a folder of photos, the very Parquet table being queried) must
never be emptied, replaced or overwritten. So:

- every folder sparkrm writes carries a marker file, :data:`MARKER`, naming the kind of folder
  (:class:`FolderKind`), and a folder is replaced or removed only when it holds that marker and nothing but
  the entries its kind writes; a missing or empty folder is claimed (the marker is written first);
- a file is overwritten only when it is recognisably ours (:class:`FileKind`: a PNG sparkrm saved says so
  in its metadata); a missing parent folder is created.

Anything else is refused with one line naming the path, what of the user's is in the way and the fix
(:class:`~spark_plugin.errors.NotOursError`). Nothing here imports Spark.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .errors import NotOursError

#: The file in each folder sparkrm writes that says which kind of folder it is.
MARKER = ".sparkrm-owner"
#: How many of the user's entries a refusal names.
_SHOWN = 3


@dataclass(frozen=True)
class FolderKind:
    """A kind of folder sparkrm writes, e.g. a Rotary checkpoint.

    Parameters
    ----------
    name : str
        What the folder is, in messages and in its marker (``"Rotary checkpoint"``).
    entries : tuple of str
        ``fnmatch`` patterns of the names such a folder holds at its top (what is under a matching
        sub-folder is that entry's). Anything else in the folder is the user's.
    """

    name: str
    entries: tuple[str, ...]

    def foreign(self, folder) -> list[str]:
        """The names at the top of ``folder`` that this kind never writes (sorted; none for a missing folder)."""
        folder = Path(folder)
        if not folder.is_dir():
            return []
        return sorted(p.name for p in folder.iterdir()
                      if not p.name.startswith(MARKER) and not any(fnmatch.fnmatchcase(p.name, e) for e in self.entries))

    def is_ours(self, folder) -> bool:
        """Whether ``folder`` is a folder of this kind that sparkrm wrote and holds nothing of the user's."""
        folder = Path(folder)
        return folder.is_dir() and _marker_kind(folder) == self.name and not self.foreign(folder)

    def check_writable(self, folder, *, what: str | None = None) -> Path:
        """Refuse ``folder`` unless writing this kind there may replace it: missing, empty or ours.

        Call it where the path enters, before any long work, so a refusal costs the user nothing.
        ``what`` names the argument in the message (``"--checkpoint"``)."""
        folder, label, found = _look(folder, what)
        if found == "file":
            raise NotOursError(f"{label} is a file, not a folder: sparkrm writes a {self.name} as a folder. "
                               f"Choose a new or empty folder.")
        if found == "folder" and any(folder.iterdir()) and not self.is_ours(folder):
            raise NotOursError(f"{label} {self._why_not_ours(folder)}: sparkrm replaces a folder only when it "
                               f"holds a {self.name} it wrote and nothing else. Choose a new or empty folder, "
                               f"or move those files away.")
        return folder

    def claim(self, folder, *, what: str | None = None) -> Path:
        """Make ``folder`` ready to write this kind into: created if missing, marked if empty, kept if ours."""
        folder = self.check_writable(folder, what=what)
        folder.mkdir(parents=True, exist_ok=True)
        if _marker_kind(folder) != self.name:  # written whole, then renamed: no reader sees half a marker
            staged = folder / f"{MARKER}.{os.getpid()}.{threading.get_ident()}"
            staged.write_text(json.dumps({"kind": self.name}) + "\n")
            os.replace(staged, folder / MARKER)
        return folder

    def remove(self, folder) -> None:
        """Delete ``folder`` (nothing when missing), once it is provably ours."""
        folder = Path(folder)
        if folder.exists():
            self.check_writable(folder)
            shutil.rmtree(folder)

    def replace(self, folder, staged) -> Path:
        """Move the finished folder ``staged`` (claimed by this kind) to ``folder``, replacing it if ours."""
        folder = Path(folder)
        self.remove(folder)
        Path(staged).rename(folder)
        return folder

    def _why_not_ours(self, folder: Path) -> str:
        foreign = self.foreign(folder)
        if foreign:
            names = ", ".join(foreign[:_SHOWN]) + (f" and {len(foreign) - _SHOWN} more" if len(foreign) > _SHOWN
                                                   else "")
            return f"holds files sparkrm did not write ({names})"
        kind = _marker_kind(folder)
        if kind is None:
            return f"holds no {MARKER} marker, so sparkrm cannot tell it wrote it"
        return f"holds a {kind}, not a {self.name}"


@dataclass(frozen=True)
class FileKind:
    """A kind of file sparkrm writes: what it is, and how to recognise one sparkrm wrote."""

    name: str
    recognise: Callable[[Path], bool]
    suffix: str = ""

    def check_writable(self, path, *, what: str | None = None) -> Path:
        """Refuse ``path`` unless it is missing or a file of this kind that sparkrm wrote; create its folder.

        Call it before the work whose result goes there."""
        path, label, found = _look(path, what)
        if found == "folder":
            raise NotOursError(f"{label} is a folder: give the path of a {self.name} to write, e.g. "
                               f"{path / ('out' + self.suffix)}.")
        if found == "file" and not self.recognise(path):
            raise NotOursError(f"{label} exists and sparkrm did not write it: it overwrites only a {self.name} "
                               f"of its own. Choose another name, or move that file away.")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise NotOursError(f"{label}: its folder cannot be created ({e.strerror}). Choose a writable path.") \
                from e
        return path


#: What sparkrm writes into the metadata of every PNG it saves (matplotlib's ``metadata=``).
PNG_METADATA = {"Software": "sparkrm"}


def _png_is_ours(path: Path) -> bool:
    """Whether ``path`` is a PNG whose tEXt chunk says sparkrm saved it (matplotlib writes it uncompressed)."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return False
    return head.startswith(b"\x89PNG") and b"Software\x00sparkrm" in head


#: A plot: matplotlib's ``savefig(path, metadata=PNG_METADATA)``.
PLOT = FileKind("PNG plot", _png_is_ours, ".png")


def save_figure(figure, path, *, what: str | None = None, **savefig) -> Path:
    """Save a matplotlib figure as a PNG that a later run may overwrite (and nothing else is overwritten)."""
    path = PLOT.check_writable(path, what=what)
    figure.savefig(path, format="png", metadata=PNG_METADATA, **savefig)
    return path


def _look(path, what: str | None) -> tuple[Path, str, str | None]:
    """``path`` (with ``~`` expanded), its label in messages (after argument ``what``) and what is there:
    ``"folder"``, ``"file"`` or None. A path the system cannot even look up (a name too long, a file where a
    folder should be) is refused in one line."""
    path = Path(path).expanduser()
    label = f"{what} {path}" if what else str(path)
    try:
        return path, label, "folder" if path.is_dir() else "file" if path.exists() else None
    except OSError as e:
        raise NotOursError(f"{label} cannot be used ({e.strerror}). Choose another path.") from None


def _marker_kind(folder: Path) -> str | None:
    try:
        return json.loads((folder / MARKER).read_text()).get("kind")
    except (OSError, ValueError, AttributeError):
        return None
