"""``python -m benchmarks.rotary.coverage``: do the automatic path's 95% intervals cover the exact answer?

Issue 36's bar: 95% intervals cover the exact value in >= 93% of (query, cell, snapshot) cases, over at
least 10 queries that are not TPC-H's 22, over the TPC-H tables and over a second generated schema of
another shape (skewed groups, a many-to-many bridge, NULLs). Each query's per-batch partial totals come
from one Spark query (``ProgressiveQuery.partials`` over every batch); ``--orders`` random batch orders are
then replayed through the engine's own ``RunningTotals.estimate``, and every interval cell (an aggregate
with an interval, in a group of the exact answer) after ``--seen`` batches is checked against the exact
value. Cells of groups that lie whole in a batch (exact once seen, half-width 0) and running values (MIN,
MAX, COUNT DISTINCT: no interval) are not counted. One JSON in ``benchmarks/results/rotary``.
"""

from __future__ import annotations

import argparse
import random

import numpy as np

from benchmarks.common import result_path, run_metadata, write_json

QUERIES = {
    "revenue-by-segment-year": """select c_mktsegment, year(o_orderdate) as y, sum(l_extendedprice * (1 - l_discount))
        as revenue, avg(l_quantity) as qty from customer, orders, lineitem
        where c_custkey = o_custkey and l_orderkey = o_orderkey group by c_mktsegment, year(o_orderdate)""",
    "discount-variance-by-mode": """select l_shipmode, variance(l_discount) as v, stddev(l_extendedprice) as sd,
        count(*) as n from lineitem group by l_shipmode""",
    "late-share-by-priority": """select o_orderpriority, sum(case when l_receiptdate > l_commitdate then 1 else 0 end)
        / count(*) as late from orders, lineitem where o_orderkey = l_orderkey group by o_orderpriority""",
    "supplier-nation-volume": """select n_name, sum(l_quantity) as qty, count(*) as lines from lineitem, supplier,
        nation where l_suppkey = s_suppkey and s_nationkey = n_nationkey group by n_name""",
    "brand-price": """select p_brand, avg(l_extendedprice) as price, sum(l_quantity) as qty from lineitem, part
        where l_partkey = p_partkey and p_size < 20 group by p_brand""",
    "returns-total": """select sum(l_extendedprice) as returned, count(*) as n from lineitem
        where l_returnflag = 'R'""",
    "store-sales": """select store, sum(amount) as total, avg(amount) as mean, count(*) as n from sales
        group by store""",
    "channel-units": """select channel, sum(units) as units, avg(units) as mean_units from sales group by channel""",
    "tag-city": """select tag, city, sum(amount) as total, count(*) as n from sales
        join stores on sales.store = stores.store join store_tags on sales.store = store_tags.store
        group by tag, city""",
    "amount-spread": """select units, stddev(amount) as sd, var_pop(amount) as vp from sales group by units""",
    "big-sales-share": """select channel, sum(case when amount > 100 then amount else 0 end) / sum(amount) as share
        from sales group by channel""",
    "all-sales": """select sum(amount) as total, count(amount) as counted, avg(units) as u from sales""",
}


def make_sales(spark, folder, rows: int = 60000, seed: int = 5) -> None:
    """The second schema: ``sales`` (Parquet in ``folder``; skewed stores, NULL amounts and channels),
    ``stores`` and ``store_tags`` (a many-to-many bridge), as temporary views of ``spark``."""
    import pandas as pd
    from pyspark.sql import functions as F

    rng = np.random.default_rng(seed)
    store = np.minimum(rng.zipf(1.6, rows), 40)
    sales = pd.DataFrame({"sale_id": np.arange(rows), "store": store,
                          "amount": np.where(rng.random(rows) < 0.1, np.nan, np.round(rng.gamma(2.0, 30.0, rows), 2)),
                          "units": rng.integers(1, 9, rows),
                          "channel": np.where(rng.random(rows) < 0.15, None,
                                              rng.choice(["web", "shop", "phone"], rows)).astype(object)})
    amount = F.when(~F.isnan("amount"), F.col("amount"))
    spark.createDataFrame(sales).withColumn("amount", amount).repartition(4).write.mode("overwrite").parquet(
        str(folder))
    spark.read.parquet(str(folder)).createOrReplaceTempView("sales")
    spark.createDataFrame(pd.DataFrame({"store": np.arange(1, 41), "city": [f"city{i % 7}" for i in range(40)]})) \
        .createOrReplaceTempView("stores")
    tags = [(s, t) for s in range(1, 41) for t in "abcd" if (s * 7 + ord(t)) % 3]
    spark.createDataFrame(pd.DataFrame(tags, columns=["store", "tag"])).createOrReplaceTempView("store_tags")


def coverage(job, orders: int, seen: list[int], rng: random.Random) -> dict:
    """Covered and counted interval cells of ``job`` over ``orders`` random batch orders."""
    from spark_plugin.rotary.totals import RunningTotals

    spec, batches = job.spec, job.batches
    per_batch = job.partials(range(batches))
    totals_names = spec.check_partials(list(per_batch[0].columns))
    full = RunningTotals(spec.keys, totals_names, dict(spec.kinds))
    for batch in per_batch:
        full.add(batch)
    shown = [k for k in spec.keys if k in spec.columns]
    truth, _ = full.estimate(spec, batches, 0.95)
    truth = truth.set_index(shown) if shown else truth
    columns = [c for c in spec.aggregates if c not in spec.running]
    out = {b: [0, 0] for b in seen}
    for _ in range(orders):
        order = rng.sample(range(batches), batches)
        totals = RunningTotals(spec.keys, totals_names, dict(spec.kinds))
        for done, b in enumerate(order, 1):
            totals.add(per_batch[b])
            if done not in out:
                continue
            estimate, half = totals.estimate(spec, batches, 0.95)
            if shown:
                estimate, half = estimate.set_index(shown), half.set_index(shown)
            common = estimate.index.intersection(truth.index)
            for column in columns:
                width = half.loc[common, column].astype(float)
                exact = truth.loc[common, column].astype(float)
                error = (estimate.loc[common, column].astype(float) - exact).abs()
                counted = width.notna() & (width > 0) & exact.notna()
                out[done][0] += int((error[counted] <= width[counted]).sum())
                out[done][1] += int(counted.sum())
    return {str(b): {"covered": c, "cells": n} for b, (c, n) in out.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.rotary.coverage", description=__doc__)
    parser.add_argument("--sf", type=float, default=0.1)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--orders", type=int, default=50, help="random batch orders replayed per query")
    parser.add_argument("--seen", default="2,5,10,15", help="batches seen at the snapshots checked")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args(argv)

    import tempfile

    from spark_plugin import rotary

    from .automatic import tpch_session

    spark, conf = tpch_session(args.sf, args.master, "rotary-coverage")
    make_sales(spark, tempfile.mkdtemp(prefix="rotary-sales-"))
    seen = [int(s) for s in args.seen.split(",")]
    rng, results = random.Random(0), {}
    for name, sql in QUERIES.items():
        job = rotary.progressive_query(spark, sql, batches=args.batches)
        results[name] = coverage(job, args.orders, seen, rng)
        cells = sum(v["cells"] for v in results[name].values())
        covered = sum(v["covered"] for v in results[name].values())
        print(f"{name}: {covered}/{cells} = {covered / max(cells, 1):.1%}", flush=True)
    spark.stop()
    covered = sum(v["covered"] for r in results.values() for v in r.values())
    cells = sum(v["cells"] for r in results.values() for v in r.values())
    meta = run_metadata({**conf, "master": args.master})
    summary = {"queries": len(results), "cells": cells, "covered": covered, "coverage": covered / max(cells, 1)}
    path = write_json(result_path("rotary", f"coverage-sf{args.sf:g}.json", meta),
                      {"meta": meta, "sf": args.sf, "batches": args.batches, "orders": args.orders, "seen": seen,
                       "summary": summary, "queries": results})
    print(f"{summary['coverage']:.1%} of {cells} interval cells covered over {len(results)} queries; {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
