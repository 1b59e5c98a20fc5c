-- Progressive TPC-H Q7: volume shipping (NATION1 = FRANCE, NATION2 = GERMANY).
-- @keys: supp_nation, cust_nation, l_year
-- @output: supp_nation, cust_nation, l_year, revenue
-- @order: supp_nation, cust_nation, l_year
-- @static: fg_suppliers = select s_suppkey, n_name as supp_nation from supplier, nation
--     where s_nationkey = n_nationkey and n_name in ('FRANCE', 'GERMANY')
-- @static: fg_customers = select c_custkey, n_name as cust_nation from customer, nation
--     where c_nationkey = n_nationkey and n_name in ('FRANCE', 'GERMANY')
select rotary_batch, supp_nation, cust_nation, l_year, sum(volume) as revenue
from (
    select lineitem.rotary_batch, supp_nation, cust_nation, extract(year from l_shipdate) as l_year,
        l_extendedprice * (1 - l_discount) as volume
    from fg_suppliers, lineitem, orders, fg_customers
    where s_suppkey = l_suppkey
        and o_orderkey = l_orderkey
        and c_custkey = o_custkey
        and ((supp_nation = 'FRANCE' and cust_nation = 'GERMANY') or (supp_nation = 'GERMANY' and cust_nation = 'FRANCE'))
        and l_shipdate between date '1995-01-01' and date '1996-12-31'
) as shipping
group by rotary_batch, supp_nation, cust_nation, l_year
