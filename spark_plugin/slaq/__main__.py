"""``python -m spark_plugin.slaq coordinator``: serve SLAQ decisions to training applications on one cluster."""

from __future__ import annotations

import os
import signal
import sys

from ..arguments import Parser, number_option, whole_number_option
from .coordinator import DEFAULT_AUTHKEY, Coordinator
from .scheduler import POLICIES

#: The most cores one coordinator splits (its allocation's work grows with them).
MAX_CORES = 100_000


def main(argv=None) -> int:
    parser = Parser(prog="python -m spark_plugin.slaq", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("coordinator", help="split a cluster's executors among training applications")
    serve.add_argument("--cores", type=whole_number_option("--cores", low=1, high=MAX_CORES), required=True,
                       help="one-core executors the training jobs share")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=whole_number_option("--port", low=0, high=65535), default=7079,
                       help="port to listen on (default 7079)")
    serve.add_argument("--policy", choices=sorted(POLICIES), default="slaq", help="allocation policy (default slaq)")
    serve.add_argument("--epoch", type=number_option("--epoch", low=0, low_open=True, high=3600,
                                                     fix="Pass seconds, e.g. 2."),
                       default=2.0, help="seconds between decisions (default 2)")
    args = parser.parse_args(argv)
    key = os.environ.get("SPARKRM_SLAQ_KEY", "").encode() or DEFAULT_AUTHKEY
    stop_signals = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)  # before any thread starts: only sigwait sees them
    try:
        coordinator = Coordinator(args.cores, address=(args.host, args.port), policy=args.policy,
                                  epoch_s=args.epoch, authkey=key).start()
    except OSError as e:  # an address that does not resolve, a port in use or not ours to bind
        parser.error(f"cannot listen on --host {args.host} --port {args.port} ({e.strerror or e}): pass an address "
                     "of this machine and a free port")
    print(f"SLAQ coordinator on {coordinator.address[0]}:{coordinator.address[1]} ({args.policy}, "
          f"{args.cores} cores, {args.epoch:g} s epochs); Ctrl-C stops it", flush=True)
    signal.sigwait(stop_signals)
    coordinator.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
