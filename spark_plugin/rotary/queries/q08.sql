-- Progressive TPC-H Q8: national market share (NATION = BRAZIL, REGION = AMERICA, TYPE = ECONOMY ANODIZED STEEL).
-- @keys: o_year
-- @output: o_year, mkt_share = brazil_volume / volume
-- @order: o_year
select rotary_batch, o_year, sum(case when nation = 'BRAZIL' then volume else 0 end) as brazil_volume, sum(volume) as volume
from (
    select lineitem.rotary_batch, extract(year from o_orderdate) as o_year, l_extendedprice * (1 - l_discount) as volume, n2.n_name as nation
    from part, supplier, lineitem, orders, customer, nation n1, nation n2, region
    where p_partkey = l_partkey
        and s_suppkey = l_suppkey
        and l_orderkey = o_orderkey
        and o_custkey = c_custkey
        and c_nationkey = n1.n_nationkey
        and n1.n_regionkey = r_regionkey
        and r_name = 'AMERICA'
        and s_nationkey = n2.n_nationkey
        and o_orderdate between date '1995-01-01' and date '1996-12-31'
        and p_type = 'ECONOMY ANODIZED STEEL'
) as all_nations
group by rotary_batch, o_year
