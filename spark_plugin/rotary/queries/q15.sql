-- Progressive TPC-H Q15: top supplier (DATE = 1996-01-01).
-- Batches hold all of a supplier's line items, so a supplier's quarterly revenue is exact the moment it is
-- seen: the answer is the top supplier among those seen so far (the query returns every supplier tied at
-- the top; revenues are exact decimals, and none tie in the generated data).
-- @batch-by: supplier
-- @keys: s_suppkey, s_name, s_address, s_phone
-- @output: s_suppkey, s_name, s_address, s_phone, total_revenue
-- @order: total_revenue desc, s_suppkey
-- @limit: 1
-- @groups: exact
select lineitem.rotary_batch, s_suppkey, s_name, s_address, s_phone,
    sum(l_extendedprice * (1 - l_discount)) as total_revenue
from supplier, lineitem
where s_suppkey = l_suppkey
    and l_shipdate >= date '1996-01-01'
    and l_shipdate < date '1996-01-01' + interval '3' month
group by lineitem.rotary_batch, s_suppkey, s_name, s_address, s_phone
