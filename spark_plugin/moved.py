"""Old import paths of modules that moved, kept working with a :class:`DeprecationWarning`.

Issue 55 gave every system one folder and the pieces several systems share one place
(``spark_plugin.shared``). A user's ``import tf_packing.hyperband`` or ``from spark_plugin.utility
import allocate`` keeps working: :func:`keep_old_paths` puts a finder first on ``sys.meta_path`` that
answers only for the old names, warns once per name, and hands back the module at its new path (the
same module object, so classes, ``isinstance`` and pickles agree). Nothing is copied.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

__all__ = ["keep_old_paths"]


class _OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finder and loader for old module names: each resolves to the module now at its new name."""

    def __init__(self, moves: dict):
        self.moves = dict(moves)

    def find_spec(self, name, path=None, target=None):
        return importlib.util.spec_from_loader(name, self) if name in self.moves else None

    def create_module(self, spec):
        return None  # a placeholder module; exec_module puts the real one in its place

    def exec_module(self, module):
        new = self.moves[module.__name__]
        warnings.warn(f"{module.__name__} moved to {new}; import it from there (the old path will be removed).",
                      DeprecationWarning, stacklevel=2)
        # The import system returns whatever sys.modules holds under the old name once this returns.
        sys.modules[module.__name__] = importlib.import_module(new)


def keep_old_paths(moves: dict) -> None:
    """Answer ``import old`` with the module at ``moves[old]`` (and a DeprecationWarning) from now on."""
    sys.meta_path.insert(0, _OldPaths(moves))
