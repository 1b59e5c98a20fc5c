-- Progressive TPC-H Q22: global sales opportunity (I1..I7 = 13, 31, 23, 29, 30, 18, 17).
-- Batches are customers with all their orders, so "has no orders" is exact within a batch; the average
-- positive balance is computed once over every customer (a static view: the customer table is small).
-- @batch-by: customer
-- @keys: cntrycode
-- @output: cntrycode, numcust, totacctbal
-- @order: cntrycode
-- @static: positive_balance = select avg(c_acctbal) as avg_acctbal from customer
--     where c_acctbal > 0.00 and substring(c_phone, 1, 2) in ('13', '31', '23', '29', '30', '18', '17')
select customer.rotary_batch, substring(c_phone, 1, 2) as cntrycode, count(*) as numcust,
    sum(c_acctbal) as totacctbal
from customer, positive_balance
where substring(c_phone, 1, 2) in ('13', '31', '23', '29', '30', '18', '17')
    and c_acctbal > avg_acctbal
    and not exists (select * from orders where o_custkey = c_custkey)
group by customer.rotary_batch, substring(c_phone, 1, 2)
