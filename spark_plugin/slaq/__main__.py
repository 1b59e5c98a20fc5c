"""``python -m spark_plugin.slaq coordinator``: serve SLAQ decisions to training applications on one cluster."""

from __future__ import annotations

import argparse
import os
import signal
import sys

from .coordinator import DEFAULT_AUTHKEY, Coordinator
from .scheduler import POLICIES


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_plugin.slaq", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("coordinator", help="split a cluster's executors among training applications")
    serve.add_argument("--cores", type=int, required=True, help="one-core executors the training jobs share")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=7079, help="port to listen on (default 7079)")
    serve.add_argument("--policy", choices=sorted(POLICIES), default="slaq", help="allocation policy (default slaq)")
    serve.add_argument("--epoch", type=float, default=2.0, help="seconds between decisions (default 2)")
    args = parser.parse_args(argv)
    if args.cores < 1 or args.epoch <= 0:
        parser.error("--cores must be >= 1 and --epoch > 0")
    key = os.environ.get("SPARKRM_SLAQ_KEY", "").encode() or DEFAULT_AUTHKEY
    stop_signals = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)  # before any thread starts: only sigwait sees them
    coordinator = Coordinator(args.cores, address=(args.host, args.port), policy=args.policy,
                              epoch_s=args.epoch, authkey=key).start()
    print(f"SLAQ coordinator on {coordinator.address[0]}:{coordinator.address[1]} ({args.policy}, "
          f"{args.cores} cores, {args.epoch:g} s epochs); Ctrl-C stops it", flush=True)
    signal.sigwait(stop_signals)
    coordinator.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
