-- Progressive TPC-H Q3: shipping priority (SEGMENT = BUILDING, DATE = 1995-03-15).
-- Groups are orders, complete within one batch: the top 10 among the orders seen so far.
-- @keys: l_orderkey, o_orderdate, o_shippriority
-- @output: l_orderkey, revenue, o_orderdate, o_shippriority
-- @order: revenue desc, o_orderdate
-- @limit: 10
-- @groups: exact
select
    lineitem.rotary_batch,
    l_orderkey,
    sum(l_extendedprice * (1 - l_discount)) as revenue,
    o_orderdate,
    o_shippriority
from customer, orders, lineitem
where c_mktsegment = 'BUILDING'
    and c_custkey = o_custkey
    and l_orderkey = o_orderkey
    and o_orderdate < date '1995-03-15'
    and l_shipdate > date '1995-03-15'
group by lineitem.rotary_batch, l_orderkey, o_orderdate, o_shippriority
