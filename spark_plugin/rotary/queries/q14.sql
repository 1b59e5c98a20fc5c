-- Progressive TPC-H Q14: promotion effect (DATE = 1995-09-01).
-- @output: promo_revenue = 100.00 * promo / total
select lineitem.rotary_batch, sum(case when p_type like 'PROMO%' then l_extendedprice * (1 - l_discount) else 0 end) as promo,
    sum(l_extendedprice * (1 - l_discount)) as total
from lineitem, part
where l_partkey = p_partkey
    and l_shipdate >= date '1995-09-01'
    and l_shipdate < date '1995-09-01' + interval '1' month
group by lineitem.rotary_batch
