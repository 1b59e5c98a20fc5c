-- Progressive TPC-H Q10: returned item reporting (DATE = 1993-10-01): top 20 customers by estimated revenue.
-- Groups are customers alone (their orders carry the key); name, address and the rest are looked up for
-- the 20 answer rows only.
-- @keys: c_custkey
-- @output: c_custkey, c_name, revenue, c_acctbal, n_name, c_address, c_phone, c_comment
-- @order: revenue desc
-- @limit: 20
-- @attributes: c_name, c_acctbal, n_name, c_address, c_phone, c_comment
-- @attributes-from: select c_custkey, c_name, c_acctbal, n_name, c_address, c_phone, c_comment
--     from customer, nation where c_nationkey = n_nationkey
select lineitem.rotary_batch, o_custkey as c_custkey, sum(l_extendedprice * (1 - l_discount)) as revenue
from orders, lineitem
where l_orderkey = o_orderkey
    and o_orderdate >= date '1993-10-01'
    and o_orderdate < date '1993-10-01' + interval '3' month
    and l_returnflag = 'R'
group by lineitem.rotary_batch, o_custkey
