-- Progressive TPC-H Q21: suppliers who kept orders waiting (NATION = SAUDI ARABIA).
-- The EXISTS subqueries look at the same order's line items, which share its batch.
-- @keys: s_name
-- @output: s_name, numwait
-- @order: numwait desc, s_name
-- @limit: 100
-- @static: saudi_suppliers = select s_suppkey, s_name from supplier, nation
--     where s_nationkey = n_nationkey and n_name = 'SAUDI ARABIA'
select l1.rotary_batch, s_name, count(*) as numwait
from saudi_suppliers, lineitem l1, orders
where s_suppkey = l1.l_suppkey
    and o_orderkey = l1.l_orderkey
    and o_orderstatus = 'F'
    and l1.l_receiptdate > l1.l_commitdate
    and exists (select * from lineitem l2 where l2.l_orderkey = l1.l_orderkey and l2.l_suppkey <> l1.l_suppkey)
    and not exists (select * from lineitem l3 where l3.l_orderkey = l1.l_orderkey and l3.l_suppkey <> l1.l_suppkey
        and l3.l_receiptdate > l3.l_commitdate)
group by l1.rotary_batch, s_name
