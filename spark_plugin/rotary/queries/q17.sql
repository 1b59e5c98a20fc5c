-- Progressive TPC-H Q17: small-quantity-order revenue (BRAND = Brand#23, CONTAINER = MED BOX).
-- Batches hold all of a part's line items, so the per-part average quantity is exact within a batch.
-- @batch-by: part
-- @output: avg_yearly = revenue / 7.0
select lineitem.rotary_batch, sum(l_extendedprice) as revenue
from lineitem, part
where p_partkey = l_partkey
    and p_brand = 'Brand#23'
    and p_container = 'MED BOX'
    and l_quantity < (select 0.2 * avg(l_quantity) from lineitem where l_partkey = p_partkey)
group by lineitem.rotary_batch
