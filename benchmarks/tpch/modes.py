"""Named harness modes: which sparkrm features each run switches on.

``vanilla`` is Spark as it is: the plugin is loaded only to record telemetry
(shuffle bytes, blocks, spill per query), which changes no execution. ``bare``
is Spark without the plugin at all; ``--modes bare,vanilla`` measures what
that recording costs. Each feature adds its mode here as it lands: ``riffle`` merges
shuffle files (with its default settings); ``rotary`` answers every query Rotary-AQP supports
progressively (:mod:`.progressive`) and reports its time to the first estimate, to 95% true
accuracy and to the exact answer beside the plain query's.
"""

from __future__ import annotations

#: mode -> sparkrm features (None: the plugin is not loaded).
MODES: dict[str, list[str] | None] = {
    "bare": None,
    "vanilla": ["telemetry"],
    "riffle": ["telemetry", "riffle"],
    "rotary": ["telemetry"],
}
#: Modes that answer the queries they can progressively (the others run as plain SQL).
PROGRESSIVE_MODES = {"rotary"}

BASELINE = "vanilla"
#: What a run compares when no --modes is given: vanilla and every feature that applies to TPC-H.
DEFAULT_MODES = ["vanilla", "riffle", "rotary"]


class ModeError(ValueError):
    """A --modes selection names an unknown mode."""


def parse_modes(text: str) -> list[str]:
    """Parse ``"vanilla,riffle"``: known, distinct mode names in the order given."""
    names = [m.strip().lower() for m in str(text).split(",") if m.strip()]
    unknown = [m for m in names if m not in MODES]
    if not names or unknown:
        problem = f"Unknown mode {unknown[0]!r}." if unknown else "No mode given."
        raise ModeError(f"{problem} Known modes: {', '.join(MODES)}.")
    return list(dict.fromkeys(names))
