"""``sparkrm submit``: check an application's sparkrm configuration, then run spark-submit on it.

``sparkrm submit --features telemetry,riffle [spark-submit options] app.py [app args]`` reads
the options spark-submit would read (``--conf``/``-c``, ``--jars``, ``--properties-file``),
adds the plugin jar, the plugin class and the features' keys without replacing anything the
user set, validates everything with the same rules as the driver plugin, and only then runs
spark-submit. A bad configuration, or an application file that is not there, stops before any JVM
starts, with the message and exit code 2.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from .activation import plugin_conf
from .errors import ConfigError, UsageError
from .properties import load_properties

__all__ = ["SubmitCommand", "parse_submit_args", "spark_submit_path"]

#: spark-submit options that take no value (every other option takes one).
_FLAGS = {"--verbose", "-v", "--supervise", "--help", "-h", "--version", "--usage-error"}
_PLUGIN_LISTS = ("spark.jars", "spark.plugins")
#: Application resources spark-submit knows by name (shells, Thrift server): no file.
_BUILT_IN_APPS = {"spark-shell", "pyspark-shell", "sparkr-shell", "spark-internal"}


@dataclass
class SubmitCommand:
    """A parsed ``sparkrm submit`` command line."""

    features: str | None = None
    dry_run: bool = False
    options: list = field(default_factory=list)  # [(option, value or None)], in order
    conf: dict = field(default_factory=dict)  # every --conf and --properties-file entry
    app: list = field(default_factory=list)  # the application resource and its arguments

    def argv(self, spark_submit: str) -> list[str]:
        """The spark-submit command: the user's options, sparkrm's entries, then the application."""
        existing = dict(self.conf)
        jars = [v for o, v in self.options if o == "--jars"]
        if jars:
            existing["spark.jars"] = ",".join(filter(None, [existing.get("spark.jars"), *jars]))
        for option, value in self.options:
            if option == "--deploy-mode":  # a cluster-mode driver runs elsewhere: its files are checked there
                existing["spark.submit.deployMode"] = value
        entries = plugin_conf(self.features, existing=existing)
        out = [spark_submit]
        for option, value in self.options:
            if option == "--jars" or (option in ("--conf", "-c") and value.split("=", 1)[0] in _PLUGIN_LISTS):
                continue  # merged into sparkrm's own --jars / spark.plugins below
            out += [option] if value is None else [option, value]
        out += ["--jars", entries.pop("spark.jars")]
        for key, value in entries.items():
            out += ["--conf", f"{key}={value}"]
        return out + self.app

    def check_application(self) -> None:
        """Refuse an application file that is not on this machine, where spark-submit reads it.

        A URL (``hdfs://``, ``local:``, ...) is fetched or found elsewhere, and a cluster-mode driver reads
        its application on the cluster (Spark asks for a path visible on every node), so those pass.

        Raises
        ------
        UsageError
            Naming the file and the fix.
        """
        resource = self.app[0]
        url = urlparse(resource)
        deploy_mode = dict(self.options).get("--deploy-mode") or self.conf.get("spark.submit.deployMode", "client")
        if resource in _BUILT_IN_APPS or url.scheme not in ("", "file") or deploy_mode.strip() == "cluster":
            return
        path = Path(url.path if url.scheme else resource).expanduser()
        if not path.is_file():
            where = "" if path.is_absolute() else f" (in {Path.cwd()})"
            raise UsageError(f"the application {resource} {'is a folder' if path.is_dir() else 'does not exist'}"
                             f"{where}. Pass the path of the .py or .jar to run: sparkrm submit "
                             f"[--features F] [spark-submit options] app.py|app.jar [app arguments].")


def parse_submit_args(args: list[str]) -> SubmitCommand:
    """Split ``sparkrm submit``'s arguments into its own, spark-submit's and the application's.

    Raises
    ------
    ConfigError
        For an option without its value, a ``--conf`` without ``=``, an unreadable
        properties file, or no application to run.
    """
    cmd = SubmitCommand()
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("-"):
            cmd.app = args[i:]
            break
        name, eq, inline = arg.partition("=")
        if name in _FLAGS or arg == "--dry-run":
            cmd.dry_run = cmd.dry_run or arg == "--dry-run"
            if arg != "--dry-run":
                cmd.options.append((arg, None))
            i += 1
            continue
        if eq:
            value = inline
            i += 1
        elif i + 1 < len(args):
            value = args[i + 1]
            i += 2
        else:
            raise ConfigError(f"{arg} needs a value. Usage: sparkrm submit [--features F] [spark-submit options] "
                              "app [app arguments]")
        if name == "--features":
            cmd.features = value
            continue
        if name in ("--conf", "-c"):
            key, sep, conf_value = value.partition("=")
            if not sep:
                raise ConfigError(f"{name} takes KEY=VALUE, got {value!r}.")
            cmd.conf[key] = conf_value  # untrimmed, as spark-submit passes it on (the validators trim values)
        elif name == "--properties-file":
            cmd.conf = {**load_properties(value), **cmd.conf}
        cmd.options.append((name, value))
    if not cmd.app:
        raise ConfigError("no application to submit. Usage: sparkrm submit [--features F] [spark-submit options] "
                          "app.py|app.jar [app arguments]")
    return cmd


def spark_submit_path() -> str:
    """spark-submit of this environment: beside this Python, inside pyspark, or on PATH."""
    import pyspark

    for candidate in (Path(sys.executable).parent / "spark-submit", Path(pyspark.__file__).parent / "bin" / "spark-submit"):
        if candidate.is_file():
            return str(candidate)
    found = shutil.which("spark-submit")
    if found is None:
        raise ConfigError("spark-submit was not found beside this Python, in pyspark or on PATH. Install pyspark "
                          "in this environment (pip install pyspark).")
    return found


def main(args: list[str]) -> int:
    """Run ``sparkrm submit``; returns spark-submit's exit code (2 for a configuration error or a missing
    application file)."""
    cmd = parse_submit_args(args)
    argv = cmd.argv(spark_submit_path())
    cmd.check_application()
    if cmd.dry_run:
        print(shlex.join(argv))
        return 0
    return subprocess.run(argv).returncode
