-- Progressive TPC-H Q18: large volume customer (QUANTITY = 300).
-- Groups are orders, complete within one batch: the top 100 among the orders seen so far.
-- @keys: c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
-- @output: c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum_qty
-- @order: o_totalprice desc, o_orderdate
-- @limit: 100
-- @groups: exact
-- @static: customer_names = select c_custkey, c_name from customer
select lineitem.rotary_batch, c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity) as sum_qty
from customer_names, orders, lineitem
where o_orderkey in (select l_orderkey from lineitem group by l_orderkey having sum(l_quantity) > 300)
    and c_custkey = o_custkey
    and o_orderkey = l_orderkey
group by lineitem.rotary_batch, c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
