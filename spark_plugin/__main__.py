"""Command line: ``sparkrm`` or ``python -m spark_plugin {jar,submit,submit-args,validate,docs}``."""

from __future__ import annotations

import sys
from pathlib import Path

from .arguments import Parser
from .errors import ConfigError, SparkrmError, print_error

#: What a failed ``submit-args`` prints on stdout: an option spark-submit rejects, so that
#: ``spark-submit $(python -m spark_plugin submit-args ...) app.py`` fails instead of running
#: the application without the plugin.
REJECTED_BY_SPARK_SUBMIT = "--sparkrm-configuration-error-see-the-message-above"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["submit"]:  # spark-submit's own options follow: not for argparse
        from . import submit

        try:
            return submit.main(argv[1:])
        except SparkrmError as e:
            return print_error(e)
    parser = Parser(prog="sparkrm", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("submit", help="validate, then run spark-submit: sparkrm submit [--features F] [--dry-run] "
                                  "[spark-submit options] app [args]")
    jar = sub.add_parser("jar", help="print the path of the plugin jar (built if missing or stale)")
    jar.add_argument("--rebuild", action="store_true", help="build it again even if it is fresh")

    args = sub.add_parser("submit-args", help="print spark-submit flags that activate sparkrm")
    args.add_argument("--features", default=None,
                      help="comma-separated features (default: telemetry; '' for none)")
    args.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                      help="extra sparkrm key, repeatable")

    check = sub.add_parser("validate", help="check the sparkrm keys of a spark-defaults.conf file")
    check.add_argument("file", type=Path)

    docs = sub.add_parser("docs", help="check or regenerate docs/configuration.md's key table and conf/")
    docs.add_argument("--write", action="store_true", help="rewrite the files instead of checking")
    docs.add_argument("--project", type=Path, default=Path.cwd(), help="project folder (default: .)")

    opts = parser.parse_args(argv)
    try:
        return _COMMANDS[opts.command](opts)
    except (SparkrmError, OSError) as e:
        if opts.command == "submit-args":
            print(REJECTED_BY_SPARK_SUBMIT)
        return print_error(e)


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
    from .properties import load_properties

    KEYS.validate(load_properties(opts.file))
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
