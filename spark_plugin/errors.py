"""Exception types raised by sparkrm.

Every message names what was wrong (a configuration key, an argument, a file),
what was found, what is accepted, and how to fix it. :func:`printable` keeps it one line whatever the
user typed (a newline in a file name, say).
"""

import sys

_LINE_BREAKING = {0x7F, 0x85, 0x2028, 0x2029}


def printable(text: str) -> str:
    """``text`` with every control or line-breaking character as ``\\uXXXX``, so a message stays one line."""
    return "".join(f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) in _LINE_BREAKING else c for c in str(text))


def print_error(error, *, prefix: str = "error") -> int:
    """Print ``error`` on stderr as the one line a command line refuses bad input with; returns exit status 2."""
    print(f"{prefix}: {printable(error)}", file=sys.stderr)
    return 2


class SparkrmError(Exception):
    """Base class of every error raised by this package."""


class ConfigError(SparkrmError, ValueError):
    """A configuration key or value is unknown, of the wrong type, or out of range."""


class JarError(SparkrmError, RuntimeError):
    """The plugin jar is missing or stale and cannot be built (for example no JDK)."""


class UnsupportedSparkVersion(SparkrmError, RuntimeError):
    """The installed Spark is outside the range this package was built and tested for."""


class UsageError(SparkrmError, ValueError):
    """A command-line argument is unusable: the message names the option, the value and the fix."""


class NotOursError(SparkrmError, ValueError):
    """A path sparkrm was asked to write holds something it did not write: refused, nothing is touched."""
