"""``python -m benchmarks.cluster up|status|down``: an emulated multi-host Spark cluster on this machine.

Examples
--------
Three hosts of two executors each, then TPC-H on it, then take it down::

    python -m benchmarks.cluster up --hosts 3 --executors-per-host 2
    python -m benchmarks.tpch --sf 1 --master "$(python -m benchmarks.cluster url)"
    python -m benchmarks.cluster down
"""

from __future__ import annotations

import argparse
import sys

from .emulated import ClusterError, ClusterSpec, default_dir, down, read_state, session_conf, up


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.cluster", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    u = sub.add_parser("up", help="start the cluster and leave it running")
    u.add_argument("--hosts", type=int, default=3, help="emulated hosts, one worker each (default 3)")
    u.add_argument("--executors-per-host", type=int, default=2, help="one-core executors per host (default 2)")
    u.add_argument("--executor-memory", type=int, default=1024, metavar="MIB", help="heap per executor (default 1024)")
    u.add_argument("--cpus-per-host", type=float, default=None,
                   help="CPU quota per host (default: this machine's CPUs shared out among the hosts)")
    u.add_argument("--iops", type=int, default=500, help="read and write IOPS cap of each host's disk; 0: none "
                                                          "(default 500)")
    u.add_argument("--apps", type=int, default=3,
                   help="applications that can each hold all their executors at once (default 3: the TPC-H "
                        "harness runs one per mode)")
    u.add_argument("--no-isolation", dest="isolate", action="store_false",
                   help="loopback addresses only: no namespaces, no cgroups (what runs without root)")
    sub.add_parser("status", help="what is up, and how to connect")
    sub.add_parser("url", help="print the master URL (for --master \"$(...)\")")
    sub.add_parser("down", help="stop everything and remove namespaces, cgroups and files")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "up":
            state = up(ClusterSpec(args.hosts, args.executors_per_host, args.executor_memory, args.cpus_per_host,
                                   args.iops, args.isolate, args.apps), log=lambda m: print(m, file=sys.stderr))
            _describe(state)
        elif args.command == "down":
            down(log=lambda m: print(m, file=sys.stderr))
        else:
            state = read_state()
            if state is None:
                raise ClusterError(f"no emulated cluster is up (no {default_dir() / 'state.json'}); start one with "
                                   "`python -m benchmarks.cluster up`.")
            print(state["master"]) if args.command == "url" else _describe(state)
    except (ClusterError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def _describe(state: dict) -> None:
    spec = state["spec"]
    print(f"master {state['master']} (web UI {state['ui']}); network: {state['network']}")
    for h in state["hosts"]:
        limits = ", ".join(sorted(h["cgroups"])) or "no cgroups"
        print(f"  {h['address']}: {spec['executors_per_host']} executors per application (up to {spec['apps']} "
              f"applications), {limits}; local dir {h['local_dir']}")
    skipped = {k: v for k, v in state["skipped"].items() if v}
    if skipped:
        print("  not emulated: " + "; ".join(f"{k} ({v})" for k, v in skipped.items()))
    conf = " ".join(f"--conf {k}={v}" for k, v in session_conf(state).items())
    print(f"connect: --master {state['master']} {conf}\n(the benchmarks add these settings themselves)")


if __name__ == "__main__":
    sys.exit(main())
