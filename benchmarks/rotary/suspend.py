"""``python -m benchmarks.rotary suspend``: Riveter's suspension of progressive TPC-H queries.

For each scale factor (``--sfs``) and supported query, in one application:

1. an uninterrupted run: its processing time T and final answer;
2. two runs whose suspension is requested after ``--at`` x T (a timer thread, as a spot-instance
   notice would), one waiting for the Spark query in flight, one cancelling it; each then resumed at
   once from its checkpoint with other shuffle partitions: the lag from request to state on disk, the
   work discarded, the state's bytes and groups, and whether the final answer equals 1.'s;
3. a run under Riveter's cost model with a termination window [0.5 T, 0.9 T] and probability 0.3
   (the thesis's Q1 case): where it chose to suspend, if it did, and again the final answer.

The state's bytes at the largest over the smallest scale factor show whether it grows with the data
(the issue's bar: within 2x) or with the groups only.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd

from benchmarks.common import result_path, run_metadata, write_json

from .report import write_suspend_report

RESUME_PARTITIONS = 3  # shuffle partitions of the resumed runs (the suspended ones use the session's)


def suspend(args):
    from benchmarks.tpch.data import default_root, ensure_dataset
    from spark_plugin import rotary
    from spark_plugin.rotary.riveter import DiskSpeed, TerminationWindow
    from spark_plugin.rotary.suspension import SuspendableQuery

    from .run import session

    spark = session(args, fair=False)
    suspended_partitions = spark.conf.get("spark.sql.shuffle.partitions")
    results = {}
    try:
        with tempfile.TemporaryDirectory(prefix="riveter-") as folder:
            checkpoints = Path(folder)
            disk = DiskSpeed.measure(checkpoints)
            for sf in args.sfs:
                data = ensure_dataset(args.data or default_root(), sf, args.parts)
                queries = args.queries or rotary.available()
                for q in queries:  # one step of each first: no timed run pays the JVM's warm-up or a batch split
                    rotary.ProgressiveQuery(spark, q, data, args.batches).step()
                for q in queries:
                    def job():
                        return rotary.ProgressiveQuery(spark, q, data, args.batches, growth=args.growth)

                    straight = job()
                    for final in straight:  # the state at half the batches, the same batches at every SF
                        if final.batch == args.batches // 2:
                            half = straight.checkpoint(checkpoints / f"q{q}-half")
                            half_state = {"bytes": sum(f.stat().st_size for f in half.iterdir()),
                                          "groups": straight.groups}
                    total_s = straight.elapsed_s

                    after_s = args.at * total_s
                    requested = _requested(spark, job(), checkpoints / f"q{q}-wait", after_s, False, final)
                    cancelled = _requested(spark, job(), checkpoints / f"q{q}-cancel", after_s, True, final)

                    window = TerminationWindow(0.5 * total_s, 0.9 * total_s, 0.3)
                    run = SuspendableQuery(job(), checkpoints / f"q{q}-model", window=window, disk=disk)
                    modelled = _finish(spark, run.run(), final)
                    modelled["decisions"] = [{"at_s": at, "strategy": d.strategy, "costs": d.costs}
                                             for at, d in run.decisions]
                    results[f"{sf:g}/{q}"] = {"sf": sf, "query": q, "total_s": total_s, "half_state": half_state,
                                              "requested": requested,
                                              "cancelled": cancelled, "cost_model": modelled}
                    print(f"SF {sf:g} Q{q}: T {total_s:.1f} s, request {requested}", file=sys.stderr, flush=True)
    finally:
        spark.stop()
    meta = run_metadata({"sfs": args.sfs, "parts": args.parts, "batches": args.batches, "growth": args.growth,
                         "at": args.at, "executors": args.executors, "master": args.master,
                         "suspended_partitions": suspended_partitions,
                         "resume_partitions": RESUME_PARTITIONS,
                         "disk": {"write_bps": disk.write_bps, "read_bps": disk.read_bps}})
    path = write_json(result_path("rotary", "suspend.json", meta, args.out), {"meta": meta, "runs": results})
    print(write_suspend_report(path))
    return path


def _requested(spark, query, path, after_s: float, cancel: bool, final) -> dict:
    """Run ``query`` with a suspension requested after ``after_s``, then resume it to the end."""
    from spark_plugin.rotary.suspension import SuspendableQuery

    run = SuspendableQuery(query, path)
    timer = threading.Timer(after_s, run.request_suspend, kwargs={"cancel_running": cancel})
    timer.start()
    outcome = run.run()
    ended = time.perf_counter()
    timer.cancel()
    result = _finish(spark, outcome, final)
    if not result["suspended"] and run.requested_at is not None:  # asked for during the last Spark query
        result["lag_s"] = ended - run.requested_at  # the time to its end
    return result


def _finish(spark, outcome, final) -> dict:
    """Resume ``outcome`` if it is a suspension (with other shuffle partitions) and run it to the end;
    what the suspension recorded, the time to finish and whether the final answer equals ``final``'s."""
    from spark_plugin.rotary import ProgressiveQuery
    from spark_plugin.rotary.suspension import Suspension

    if not isinstance(outcome, Suspension):
        return {"suspended": False, "same_answer": _same(outcome.result, final.result)}
    job = ProgressiveQuery.resume(spark, outcome.path)
    job.spark.conf.set("spark.sql.shuffle.partitions", str(RESUME_PARTITIONS))
    start = time.perf_counter()
    *_, last = job
    return {"suspended": True, "reason": outcome.reason, "batches_done": outcome.batches_done,
            "elapsed_s": outcome.elapsed_s, "lag_s": outcome.lag_s, "write_s": outcome.write_s,
            "discarded_s": outcome.discarded_s,
            "state_bytes": outcome.state_bytes, "groups": outcome.groups,
            "resume_to_end_s": time.perf_counter() - start, "same_answer": _same(last.result, final.result)}


def _same(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    try:
        pd.testing.assert_frame_equal(a, b)
        return True
    except AssertionError:
        return False
