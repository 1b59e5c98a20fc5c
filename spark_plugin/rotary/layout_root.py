"""The layouts folder (``--layouts``): where prepared layouts and the uniqueness cache live, and the rule that
makes it sparkrm's before anything is written there.

It holds a folder per table (:mod:`.layouts`) and the cache of :mod:`.unique`; both write only after
:func:`claim_root`, so a folder holding anything of the user's is refused, never written into.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import SparkrmError
from ..ownership import FolderKind
from .batches import check_ours

#: The file in which :mod:`.unique` remembers which columns are unique, by the version of their table.
CACHE_FILE = "unique.json"
#: The folder of layouts: a folder per table (``<name>-<12 hex digits>``) and the uniqueness cache.
LAYOUTS_ROOT = FolderKind("Rotary layouts folder", ("*-" + "[0-9a-f]" * 12, CACHE_FILE, CACHE_FILE + ".tmp"))


class LayoutError(SparkrmError, ValueError):
    """A table cannot be prepared (not a single file-based table, unknown key); the message says why."""


def default_root() -> Path:
    return Path.home() / ".cache" / "sparkrm" / "rotary" / "layouts"


def claim_root(root=None, what: str | None = None) -> Path:
    """The layouts folder ``root`` (default :func:`default_root`), created and marked, once layouts may be
    written there: missing, empty or a layouts folder of sparkrm's, and writable. ``what`` names the argument.

    Raises
    ------
    NotOursError
        The folder holds something of the user's.
    LayoutError
        The folder cannot be created or written (a read-only home or folder).
    """
    root = Path(root or default_root()).expanduser()
    label = f"{what} {root}" if what else f"layouts folder {root}"
    fix = "pass --layouts (root= in Python) a writable folder of its own"
    try:
        check_ours(LAYOUTS_ROOT, root, what)
        LAYOUTS_ROOT.claim(root, what=what)
    except OSError as e:
        raise LayoutError(f"{label} cannot be written ({e.strerror or e}): {fix}") from None
    if not os.access(root, os.W_OK | os.X_OK):
        raise LayoutError(f"{label} is not writable: {fix}")
    return root
