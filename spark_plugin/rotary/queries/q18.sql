-- Progressive TPC-H Q18: large volume customer (QUANTITY = 300).
-- Groups are orders, complete within one batch: the top 100 among the orders seen so far. Each order's
-- quantity is summed once, in the subquery that picks the large orders (the query as written sums the line
-- items again in the join: two passes over lineitem per chunk).
-- @keys: c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
-- @output: c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum_qty
-- @order: o_totalprice desc, o_orderdate
-- @limit: 100
-- @groups: exact
-- @static: customer_names = select c_custkey, c_name from customer
select large.rotary_batch, c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum_qty
from (
    select rotary_batch, l_orderkey, sum(l_quantity) as sum_qty
    from lineitem
    group by rotary_batch, l_orderkey
    having sum(l_quantity) > 300
) as large, orders, customer_names
where o_orderkey = l_orderkey
    and c_custkey = o_custkey
