"""Exception types raised by sparkrm.

Every message names what was wrong (a configuration key, an argument, a file),
what was found, what is accepted, and how to fix it.
"""


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
