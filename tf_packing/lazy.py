"""Names a package exports but imports on first use, so that importing it stays cheap without TensorFlow.

Each of ``tf_packing``'s packages exports TensorFlow-backed names (``pack``, ``Tuner``, ``DltArbiter``)
beside pure-Python policy. :func:`lazy_exports` gives a package a module ``__getattr__`` that imports the
module behind a name when it is first asked for, and names the install that fixes a missing TensorFlow.
"""

from __future__ import annotations

import importlib

__all__ = ["TensorFlowMissing", "lazy_exports"]


class TensorFlowMissing(ImportError):
    """A TensorFlow-backed name was asked for where TensorFlow is not installed."""


def lazy_exports(package: str, names: dict):
    """A module ``__getattr__`` for ``package`` serving ``names``: exported name -> module (relative to it),
    or -> ``(module, attribute)`` where the name differs inside the module."""

    def __getattr__(name):
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = names[name] if isinstance(names[name], tuple) else (names[name], name)
        try:
            return getattr(importlib.import_module(module, package), attribute)
        except (ModuleNotFoundError, TensorFlowMissing) as e:
            # A name re-exported from a subpackage is reported as the user asked for it.
            if isinstance(e, TensorFlowMissing) or (e.name or "").split(".")[0] in ("tensorflow", "keras"):
                raise TensorFlowMissing(f"{package}.{name} needs TensorFlow, which this installation lacks. "
                                        "Install it with: pip install 'sparkrm[tf]'") from e
            raise

    return __getattr__
