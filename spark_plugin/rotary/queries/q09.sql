-- Progressive TPC-H Q9: product type profit measure (COLOR = green).
-- @keys: nation, o_year
-- @output: nation, o_year, sum_profit
-- @order: nation, o_year desc
select rotary_batch, nation, o_year, sum(amount) as sum_profit
from (
    select lineitem.rotary_batch, n_name as nation, extract(year from o_orderdate) as o_year,
        l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity as amount
    from part, supplier, lineitem, partsupp, orders, nation
    where s_suppkey = l_suppkey
        and ps_suppkey = l_suppkey
        and ps_partkey = l_partkey
        and p_partkey = l_partkey
        and o_orderkey = l_orderkey
        and s_nationkey = n_nationkey
        and p_name like '%green%'
) as profit
group by rotary_batch, nation, o_year
