"""Command line: ``python -m spark_plugin {jar,submit-args,validate,docs}``."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from .errors import ConfigError, SparkrmError

#: A java.util.Properties line as Spark reads spark-defaults.conf: key, then '=', ':' or blanks.
_PROPERTY = re.compile(r"^\s*([^\s=:]+)\s*[=:\s]\s*(.*)$")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_plugin", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    jar = sub.add_parser("jar", help="print the path of the plugin jar (built if missing or stale)")
    jar.add_argument("--rebuild", action="store_true", help="build it again even if it is fresh")

    args = sub.add_parser("submit-args", help="print spark-submit flags that activate sparkrm")
    args.add_argument("--features", default=None,
                      help="comma-separated features (default: telemetry; '' for none)")
    args.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                      help="extra sparkrm key, repeatable")

    check = sub.add_parser("validate", help="check the sparkrm keys of a spark-defaults.conf file")
    check.add_argument("file", type=Path)

    docs = sub.add_parser("docs", help="check or regenerate README's key table and conf/")
    docs.add_argument("--write", action="store_true", help="rewrite the files instead of checking")
    docs.add_argument("--project", type=Path, default=Path.cwd(), help="project folder (default: .)")

    opts = parser.parse_args(argv)
    try:
        return _COMMANDS[opts.command](opts)
    except SparkrmError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _jar(opts) -> int:
    from .jar import jar_path

    print(jar_path(rebuild=opts.rebuild))
    return 0


def _submit_args(opts) -> int:
    from .activation import format_submit_args, submit_args

    conf = {}
    for item in opts.conf:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--conf takes KEY=VALUE, got {item!r}.")
        conf[key.strip()] = value.strip()
    print(format_submit_args(submit_args(opts.features, conf)))
    return 0


def _validate(opts) -> int:
    from .keys import KEYS

    if not opts.file.is_file():
        raise ConfigError(f"{opts.file} does not exist or is not a file; pass a spark-defaults.conf path.")
    conf = {}
    for line in opts.file.read_text().splitlines():
        m = _PROPERTY.match(line)
        if m and not line.lstrip().startswith(("#", "!")):
            conf[m.group(1)] = m.group(2).strip()
    KEYS.validate(conf)
    print(f"{opts.file}: sparkrm keys are valid")
    return 0


def _docs(opts) -> int:
    from . import docs

    if opts.write:
        docs.write(opts.project)
        return 0
    stale = docs.outdated(opts.project)
    for path in stale:
        print(f"{path} is out of date; run `python -m spark_plugin docs --write`", file=sys.stderr)
    return 1 if stale else 0


_COMMANDS = {"jar": _jar, "submit-args": _submit_args, "validate": _validate, "docs": _docs}

if __name__ == "__main__":
    sys.exit(main())
