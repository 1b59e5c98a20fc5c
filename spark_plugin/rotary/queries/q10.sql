-- Progressive TPC-H Q10: returned item reporting (DATE = 1993-10-01): top 20 customers by estimated revenue.
-- @keys: c_custkey, c_name, c_acctbal, n_name, c_address, c_phone, c_comment
-- @output: c_custkey, c_name, revenue, c_acctbal, n_name, c_address, c_phone, c_comment
-- @order: revenue desc
-- @limit: 20
select lineitem.rotary_batch, c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) as revenue, c_acctbal, n_name, c_address,
    c_phone, c_comment
from customer, orders, lineitem, nation
where c_custkey = o_custkey
    and l_orderkey = o_orderkey
    and o_orderdate >= date '1993-10-01'
    and o_orderdate < date '1993-10-01' + interval '3' month
    and l_returnflag = 'R'
    and c_nationkey = n_nationkey
group by lineitem.rotary_batch, c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
