"""Named feature sets: what ``features=[...]`` and ``--features`` switch on.

A feature is a bundle of configuration entries. The plugin itself is always
loaded; with no feature selected it records nothing and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import ConfigError
from .keys import KEYS, RIFFLE_SHUFFLE_MANAGER


@dataclass(frozen=True)
class Feature:
    """A user-facing switch and the Spark configuration it implies; ``conf``'s first key is the switch.

    ``on_session`` (``module:function``) is what :func:`spark_plugin.session` runs with the started session
    when the switch is on: the system's own Python side, named here as data so that the core imports no system.
    """

    name: str
    doc: str
    conf: dict = field(default_factory=dict)
    on_session: str = ""

    @property
    def switch(self) -> str:
        return next(iter(self.conf))


FEATURES = {f.name: f for f in (
    Feature("telemetry", "Task/stage/job/executor metrics recorded in the driver.",
            {"spark.sparkrm.telemetry.enabled": "true"}),
    Feature("riffle", "Shuffle-file merging in the executors (Riffle).",
            {"spark.riffle.enabled": "true", "spark.shuffle.manager": RIFFLE_SHUFFLE_MANAGER}),
    Feature("wrangler", "Straggler prediction: node counters, and holds on executors predicted to straggle.",
            {"spark.wrangler.enabled": "true", "spark.sparkrm.telemetry.enabled": "true"},
            on_session="spark_plugin.wrangler:start"),
)}

#: What :func:`spark_plugin.configure` enables when ``features`` is not given.
DEFAULT_FEATURES = ("telemetry",)

#: The value each feature's switches take when that feature is *not* selected.
_OFF = {"spark.sparkrm.telemetry.enabled": "false", "spark.riffle.enabled": "false",
        "spark.wrangler.enabled": "false"}


def feature_conf(features, given=None) -> dict:
    """Return the configuration entries for a collection of feature names.

    Features not named are switched off explicitly, so that a selection means
    exactly what it says whatever the key defaults are. A value the user already
    set (``given``) is never replaced: a different one is an error naming both.

    Raises
    ------
    ConfigError
        If a name is not a known feature, or a feature's entry contradicts ``given``.
    """
    if isinstance(features, str):
        features = [f for f in features.split(",") if f.strip()]
    names = [f.strip().lower() for f in features]
    unknown = [n for n in names if n not in FEATURES]
    if unknown:
        raise ConfigError(f"Unknown feature {unknown[0]!r}. Known features: "
                          f"{', '.join(sorted(FEATURES))}. Use e.g. features=['telemetry'].")
    conf = dict(_OFF)
    for name in names:
        conf.update(FEATURES[name].conf)
    for key in [k for k in conf if given and k in given and not _parses(k, str(given[k]))]:
        del conf[key]  # the user's value stays, for validation to refuse; replacing it would hide the mistake
    clashes = [_clash(key, value, str(given[key]), names) for key, value in conf.items()
               if given and key in given and not _same(key, value, str(given[key]))]
    if clashes:
        raise ConfigError("\n".join(clashes))
    return conf


def _parses(key: str, value: str) -> bool:
    """Whether ``value`` is a valid value of ``key`` (a key outside our table always is)."""
    if key not in KEYS.keys:
        return True
    try:
        KEYS[key].parse(value)
    except ConfigError:
        return False
    return True


def _same(key: str, wanted: str, given: str) -> bool:
    """Whether two values of ``key`` mean the same (a value our table cannot parse is left to validation)."""
    if key in KEYS.keys:
        try:
            return KEYS[key].parse(given) == KEYS[key].parse(wanted)
        except ConfigError:
            return True
    return given.strip() == wanted


def _clash(key: str, wanted: str, given: str, names) -> str:
    setters = sorted(f.name for f in FEATURES.values() if f.conf.get(key) not in (None, _OFF.get(key)))
    if key in _OFF and wanted == _OFF[key]:
        fix = f"Add {' or '.join(repr(n) for n in setters)} to the features, or remove {key}."
    else:
        fix = f"Remove {key}, or leave out the feature{'s' if len(setters) > 1 else ''} {', '.join(setters)}."
    return (f"features={sorted(names)} set {key}={wanted}, but your configuration sets it to '{given}'; "
            f"sparkrm never replaces a value you set. {fix}")
