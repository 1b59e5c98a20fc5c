-- Progressive TPC-H Q1: pricing summary report (DELTA = 90).
-- @keys: l_returnflag, l_linestatus
-- @output: l_returnflag, l_linestatus, sum_qty, sum_base_price, sum_disc_price, sum_charge,
--          avg_qty = sum_qty / count_order, avg_price = sum_base_price / count_order,
--          avg_disc = sum_disc / count_order, count_order
-- @order: l_returnflag, l_linestatus
select
    rotary_batch,
    l_returnflag,
    l_linestatus,
    sum(l_quantity) as sum_qty,
    sum(l_extendedprice) as sum_base_price,
    sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
    sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge,
    sum(l_discount) as sum_disc,
    count(*) as count_order
from lineitem
where l_shipdate <= date '1998-12-01' - interval '90' day
group by rotary_batch, l_returnflag, l_linestatus
