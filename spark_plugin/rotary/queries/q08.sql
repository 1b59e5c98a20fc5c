-- Progressive TPC-H Q8: national market share (NATION = BRAZIL, REGION = AMERICA, TYPE = ECONOMY ANODIZED STEEL).
-- @keys: o_year
-- @output: o_year, mkt_share = brazil_volume / volume
-- @order: o_year
-- @static: steel_parts = select p_partkey from part where p_type = 'ECONOMY ANODIZED STEEL'
-- @static: america_customers = select c_custkey from customer, nation, region
--     where c_nationkey = n_nationkey and n_regionkey = r_regionkey and r_name = 'AMERICA'
-- @static: supplier_nations = select s_suppkey, n_name as nation from supplier, nation where s_nationkey = n_nationkey
select rotary_batch, o_year, sum(case when nation = 'BRAZIL' then volume else 0 end) as brazil_volume, sum(volume) as volume
from (
    select lineitem.rotary_batch, extract(year from o_orderdate) as o_year, l_extendedprice * (1 - l_discount) as volume,
        nation
    from steel_parts, supplier_nations, lineitem, orders, america_customers
    where p_partkey = l_partkey
        and s_suppkey = l_suppkey
        and l_orderkey = o_orderkey
        and o_custkey = c_custkey
        and o_orderdate between date '1995-01-01' and date '1996-12-31'
) as all_nations
group by rotary_batch, o_year
