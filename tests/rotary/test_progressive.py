"""Progressive TPC-H queries on ``local[2]``, checked against DuckDB and against themselves.

SF 0.01 with 4 batches keeps a full pass over every shipped spec to about half a minute. The engine runs
Spark SQL from the driver and nothing here depends on executors (the arbiter's per-executor checks run on
local-cluster in test_arbiter.py): local mode spares the cluster's two executor JVMs (64 to 48 CPU-s).
"""

import random

import numpy as np
import pandas as pd
import pytest

from benchmarks.tpch.data import ensure_dataset
from benchmarks.tpch.oracle import DuckDBOracle, compare
from benchmarks.tpch.queries import order_columns, query_text
from spark_plugin import rotary
from spark_plugin.rotary.totals import RunningTotals

pytestmark = pytest.mark.spark
SPARK_SESSION = dict(master="local[2]", features=[], conf={})  # see the module's docstring; no telemetry read

BATCHES = 4


@pytest.fixture(scope="module")
def data(session_dir):
    return ensure_dataset(session_dir / "tpch", 0.01, 2)


@pytest.fixture(scope="module")
def oracle(data):
    return DuckDBOracle(data)


@pytest.fixture(scope="module")
def default_run(spark, data):
    """A query's snapshots with the default chunks (``growth`` 4: batch 1, then the other three in one Spark
    query), run once for the two tests that read them: its exact answer and its trajectory."""
    runs = {}

    def run(q):
        if q not in runs:
            runs[q] = list(rotary.progressive(spark, q, data, batches=BATCHES))
        return runs[q]

    return run


@pytest.mark.parametrize("q", rotary.available())
def test_the_last_batch_gives_the_exact_answer(data, oracle, default_run, q):
    snapshots = default_run(q)
    assert [s.batch for s in snapshots] == list(range(1, BATCHES + 1))
    final = snapshots[-1]
    assert final.final and final.fraction == 1
    columns, expected = oracle.answer(query_text(q, 0.01))
    assert list(final.result.columns) == columns
    compare(columns, list(final.result.itertuples(index=False, name=None)), expected,
            order_columns(query_text(q, 0.01)))
    aggregates = rotary.load(q).aggregates
    assert (final.ci[aggregates].fillna(0).to_numpy() == 0).all(), "every batch is in: no uncertainty left"


def test_sums_and_counts_scale_by_the_inverse_fraction_and_averages_do_not(spark, data):
    job = rotary.ProgressiveQuery(spark, 1, data, batches=BATCHES)
    first = job.step().result.set_index(["l_returnflag", "l_linestatus"])
    alone = job.partials([job.order[0]])[0].set_index(["l_returnflag", "l_linestatus"])
    for flag in first.index:
        assert first.loc[flag, "sum_qty"] == alone.loc[flag, "sum_qty"] * BATCHES
        assert first.loc[flag, "count_order"] == int(alone.loc[flag, "count_order"]) * BATCHES
        assert float(first.loc[flag, "avg_qty"]) == pytest.approx(float(alone.loc[flag, "sum_qty"] / alone.loc[flag, "count_order"]))


def test_intervals_cover_the_truth_at_their_confidence_over_random_batch_orders(spark, data):
    """Per-batch partials come from Spark once; 40 random batch orders are then replayed exactly."""
    batches, seen = 20, 8
    job = rotary.ProgressiveQuery(spark, 1, data, batches=batches)
    per_batch = job.partials(range(batches))  # one Spark query
    truth = job.exact().set_index(["l_returnflag", "l_linestatus"])
    spec, totals_names = job.spec, [c for c in per_batch[0].columns if c not in job.spec.keys]
    rng = random.Random(7)
    covered = cells = 0
    for _ in range(40):  # 1,280 interval cells, 96.8% covered (fixed seeds: the same in every run)
        totals = RunningTotals(spec.keys, totals_names)
        for b in rng.sample(range(batches), seen):
            totals.add(per_batch[b])
        estimate, half = (f.set_index(["l_returnflag", "l_linestatus"]) for f in totals.estimate(spec, batches, 0.95))
        for column in spec.aggregates:
            error = (estimate[column].astype(float) - truth.loc[estimate.index, column].astype(float)).abs()
            covered += int((error <= half[column]).sum())
            cells += len(error)
    assert 0.88 <= covered / cells <= 0.995, f"95% intervals covered {covered / cells:.1%} of {cells} cells"


def test_a_resumed_query_follows_the_uninterrupted_trajectory(spark, data, tmp_path):
    first = rotary.ProgressiveQuery(spark, 5, data, batches=BATCHES, order_seed=3)
    resumed_from = [first.step(), first.step()]
    first.checkpoint(tmp_path / "q5")  # writes the state only: ``first`` goes on, the uninterrupted run
    assert {p.name for p in (tmp_path / "q5").iterdir()} == {".sparkrm-owner", "state.json", "totals.parquet"}
    job = rotary.ProgressiveQuery.resume(spark, tmp_path / "q5")
    assert job.batches_done == 2 and job.order == first.order
    straight = resumed_from + list(first)  # batches 3 and 4 from its own chunk, in memory
    trajectory = resumed_from + list(job)  # computed again from the checkpoint
    assert len(trajectory) == len(straight)
    for a, b in zip(trajectory, straight):
        pd.testing.assert_frame_equal(a.result, b.result)
        pd.testing.assert_frame_equal(a.ci, b.ci)


def test_the_batch_order_depends_on_the_order_seed_only(spark, data):
    a = rotary.ProgressiveQuery(spark, 6, data, batches=BATCHES, order_seed=1)
    b = rotary.ProgressiveQuery(spark, 6, data, batches=BATCHES, order_seed=1)
    c = rotary.ProgressiveQuery(spark, 6, data, batches=BATCHES, order_seed=2)
    assert a.order == b.order and sorted(a.order) == list(range(BATCHES))
    assert np.array_equal(sorted(c.order), sorted(a.order))


def test_bad_input_is_refused_with_a_reason(spark, data, tmp_path):
    with pytest.raises(rotary.QuerySpecError, match=r"Q2 has no progressive spec; supported: Q1, Q3"):
        rotary.ProgressiveQuery(spark, 2, data)
    with pytest.raises(ValueError, match=r"batches must be a whole number in \[2, 1000\]"):
        rotary.ProgressiveQuery(spark, 1, data, batches=1)
    with pytest.raises(ValueError, match=r"confidence must be a finite number > 0 and < 1\. Got 95\."):
        rotary.ProgressiveQuery(spark, 1, data, confidence=95)
    with pytest.raises(rotary.BatchDataError, match="lacks TPC-H table folder"):
        rotary.ProgressiveQuery(spark, 1, tmp_path)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "state.json").write_text("{not json")
    with pytest.raises(ValueError, match="is not a progressive query checkpoint"):
        rotary.ProgressiveQuery.resume(spark, tmp_path / "broken")
    job = rotary.ProgressiveQuery(spark, 6, data, batches=BATCHES)
    with pytest.raises(RuntimeError, match="no batch processed yet"):
        job.snapshot()


def test_groups_seen_whole_have_no_interval_from_the_first_batch(spark, data):
    job = rotary.ProgressiveQuery(spark, 3, data, batches=BATCHES)  # Q3's groups are orders
    first = job.step()
    assert (first.ci[job.spec.aggregates].to_numpy() == 0).all()


@pytest.mark.parametrize("q", [6, 9, 18, 21])  # no groups, a static view, exact groups, EXISTS
def test_chunks_of_batches_give_the_trajectory_of_one_query_per_batch(spark, data, default_run, q):
    chunked = default_run(q)  # batch 1, then batches 2 to 4 in one Spark query
    one_by_one = list(rotary.progressive(spark, q, data, batches=BATCHES, growth=1))  # the same order of batches
    assert [s.batch for s in chunked] == list(range(1, BATCHES + 1))
    for a, b in zip(chunked, one_by_one, strict=True):
        pd.testing.assert_frame_equal(a.result, b.result)  # exact types: Decimal totals equal to the cent
        pd.testing.assert_frame_equal(a.ci, b.ci, rtol=1e-9)


def test_a_spec_without_the_batch_column_runs_one_query_per_batch(spark, data, tmp_path):
    spec = tmp_path / "revenue.sql"
    spec.write_text("-- @output: revenue\nselect sum(l_extendedprice) as revenue from lineitem\n")
    job = rotary.ProgressiveQuery(spark, spec, data, batches=BATCHES)
    assert job.growth == 1 and not job.spec.by_batch
    snapshots = list(job)
    assert snapshots[-1].result["revenue"][0] == job.exact()["revenue"][0]
    with pytest.raises(rotary.QuerySpecError, match="does not group by rotary_batch"):
        job.partials([0, 1])


def static_view_cached(job) -> bool:
    frame = job.spark.sql(job.spec.statics[0][1])  # the job's session has the tables registered
    return job.spark._jsparkSession.sharedState().cacheManager().lookupCachedData(frame._jdf).isDefined()


def test_static_views_are_cached_while_a_query_uses_them_and_released_by_the_last(spark, data):
    first = rotary.ProgressiveQuery(spark, 9, data, batches=BATCHES)
    second = rotary.ProgressiveQuery(spark, 9, data, batches=BATCHES)
    first.step()
    second.step()
    assert static_view_cached(first)  # green_supply, computed once, read by both
    list(first)  # the last batch releases the first query's hold
    assert static_view_cached(second)
    with second:
        second.step()
    assert not static_view_cached(second)
    third = rotary.ProgressiveQuery(spark, 9, data, batches=BATCHES)
    third.exact()
    assert not static_view_cached(third)


def test_attributes_are_looked_up_for_the_rows_each_answer_shows(spark, data):
    job = rotary.ProgressiveQuery(spark, 10, data, batches=BATCHES)  # top 20 customers: name, address ... by key
    snapshots = list(job)
    customers = job.spark.sql(job.spec.attributes_sql).toPandas().set_index("c_custkey")  # every customer
    for snap in snapshots:
        shown = customers.loc[snap.result["c_custkey"], list(job.spec.attributes)].reset_index(drop=True)
        pd.testing.assert_frame_equal(snap.result[list(job.spec.attributes)], shown, check_dtype=False)
    assert len(job._attributes) < len(customers)  # only keys an answer showed, and those just below them


def test_a_batched_copy_missing_a_batch_is_made_again_never_answered_exact_without_it(spark, data, oracle, caplog):
    from spark_plugin.rotary.batches import prepare
    from spark_plugin.rotary.spec import BATCH_COLUMN

    # the module's own copy (the other tests made it): each damage below is repaired by the run after it, so the
    # copy is whole again when the test ends
    batched = prepare(spark, data, batches=BATCHES)
    orders = batched.layout_folder("orders")
    columns, expected = oracle.answer(query_text(3, 0.01))
    for victim in (orders / "lineitem" / f"{BATCH_COLUMN}=2", orders / "orders" / f"{BATCH_COLUMN}=1"):
        for f in victim.iterdir():
            f.unlink()
        victim.rmdir()
        with caplog.at_level("WARNING", logger="spark_plugin.rotary.batches"):
            final = list(rotary.progressive(spark, 3, data, batches=BATCHES))[-1]
        assert f"Rotary's batched copy {orders} is damaged" in caplog.text and "making it again" in caplog.text
        caplog.clear()
        assert final.final
        compare(columns, list(final.result.itertuples(index=False, name=None)), expected,
                order_columns(query_text(3, 0.01)))
