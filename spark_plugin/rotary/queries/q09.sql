-- Progressive TPC-H Q9: product type profit measure (COLOR = green).
-- The green parts' supply (about 5% of partsupp) is broadcast: joined by sort-merge, every chunk shuffled all of
-- its line items (1.9 GB at SF 10, against 0.44 GB for the plain query).
-- @keys: nation, o_year
-- @output: nation, o_year, sum_profit
-- @order: nation, o_year desc
-- @static: green_supply = select ps_partkey, ps_suppkey, ps_supplycost, n_name from part, partsupp, supplier, nation
--     where p_name like '%green%' and p_partkey = ps_partkey and s_suppkey = ps_suppkey and s_nationkey = n_nationkey
select rotary_batch, nation, o_year, sum(amount) as sum_profit
from (
    select /*+ BROADCAST(green_supply) */ lineitem.rotary_batch, n_name as nation,
        extract(year from o_orderdate) as o_year,
        l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity as amount
    from lineitem, green_supply, orders
    where ps_suppkey = l_suppkey
        and ps_partkey = l_partkey
        and o_orderkey = l_orderkey
) as profit
group by rotary_batch, nation, o_year
