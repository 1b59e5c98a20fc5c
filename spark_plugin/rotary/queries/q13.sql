-- Progressive TPC-H Q13: customer distribution (WORD1 = special, WORD2 = requests).
-- Batches are customers with all their orders, so each customer's order count is exact within its batch;
-- the number of customers with each count is a total over batches.
-- @batch-by: customer
-- @keys: c_count
-- @output: c_count, custdist
-- @order: custdist desc, c_count desc
select rotary_batch, c_count, count(*) as custdist
from (
    select customer.rotary_batch, c_custkey, count(o_orderkey) as c_count
    from customer left outer join orders on c_custkey = o_custkey and o_comment not like '%special%requests%'
    group by customer.rotary_batch, c_custkey
) as c_orders
group by rotary_batch, c_count
