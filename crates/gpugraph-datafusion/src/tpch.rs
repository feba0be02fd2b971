//! TPC-H queries: all 22 as the specification writes them ([`QUERIES`], the files
//! `src/tpch/q1.sql` … `q22.sql`), and the ones the GPU plans take as `bench tpch` and the
//! tests run them (DataFusion's benchmark texts, one line each); each doc says what makes
//! it interesting for the GPU.

/// The 22 TPC-H queries as files hold them: the specification's templates (2.4.1 … 2.4.22)
/// with its validation parameters, as DataFusion's benchmark substitutes them, each file
/// opening with a `--` comment naming the query and its parameters. Q2, Q3, Q10, Q18 and
/// Q21 keep the `limit` their reports ask for; Q15 is a script (`create view revenue0`, the
/// query, `drop view revenue0`). `QUERIES[n - 1]` is Qn.
pub const QUERIES: [&str; 22] = [
    include_str!("tpch/q1.sql"),
    include_str!("tpch/q2.sql"),
    include_str!("tpch/q3.sql"),
    include_str!("tpch/q4.sql"),
    include_str!("tpch/q5.sql"),
    include_str!("tpch/q6.sql"),
    include_str!("tpch/q7.sql"),
    include_str!("tpch/q8.sql"),
    include_str!("tpch/q9.sql"),
    include_str!("tpch/q10.sql"),
    include_str!("tpch/q11.sql"),
    include_str!("tpch/q12.sql"),
    include_str!("tpch/q13.sql"),
    include_str!("tpch/q14.sql"),
    include_str!("tpch/q15.sql"),
    include_str!("tpch/q16.sql"),
    include_str!("tpch/q17.sql"),
    include_str!("tpch/q18.sql"),
    include_str!("tpch/q19.sql"),
    include_str!("tpch/q20.sql"),
    include_str!("tpch/q21.sql"),
    include_str!("tpch/q22.sql"),
];

/// The eight TPC-H tables, in the specification's order.
pub const TABLES: [&str; 8] = [
    "part", "supplier", "partsupp", "customer", "orders", "lineitem", "nation", "region",
];

/// TPC-H Q1 (DataFusion's benchmark text, delta 90 days).
pub const Q1: &str = "select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty, \
    sum(l_extendedprice) as sum_base_price, sum(l_extendedprice * (1 - l_discount)) as sum_disc_price, \
    sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge, avg(l_quantity) as avg_qty, \
    avg(l_extendedprice) as avg_price, avg(l_discount) as avg_disc, count(*) as count_order \
    from lineitem where l_shipdate <= date '1998-12-01' - interval '90' day \
    group by l_returnflag, l_linestatus order by l_returnflag, l_linestatus";

/// TPC-H Q6.
pub const Q6: &str = "select sum(l_extendedprice * l_discount) as revenue from lineitem \
    where l_shipdate >= date '1994-01-01' and l_shipdate < date '1994-01-01' + interval '1' year \
    and l_discount between 0.06 - 0.01 and 0.06 + 0.01 and l_quantity < 24";

/// TPC-H Q12 (lineitem joined with orders; `l_shipmode IN (…)` compared as codes on the GPU,
/// the CASEs over `o_orderpriority` gathered by key).
pub const Q12: &str = "select l_shipmode, sum(case when o_orderpriority = '1-URGENT' \
    or o_orderpriority = '2-HIGH' then 1 else 0 end) as high_line_count, \
    sum(case when o_orderpriority <> '1-URGENT' and o_orderpriority <> '2-HIGH' then 1 else 0 end) \
    as low_line_count from orders, lineitem where o_orderkey = l_orderkey \
    and l_shipmode in ('MAIL', 'SHIP') and l_commitdate < l_receiptdate \
    and l_shipdate < l_commitdate and l_receiptdate >= date '1994-01-01' \
    and l_receiptdate < date '1994-01-01' + interval '1' year \
    group by l_shipmode order by l_shipmode";

/// TPC-H Q14 (lineitem joined with part; the GPU gathers `p_type LIKE 'PROMO%'` by key).
pub const Q14: &str = "select 100.00 * sum(case when p_type like 'PROMO%' \
    then l_extendedprice * (1 - l_discount) else 0 end) / sum(l_extendedprice * (1 - l_discount)) \
    as promo_revenue from lineitem, part where l_partkey = p_partkey \
    and l_shipdate >= date '1995-09-01' and l_shipdate < date '1995-09-01' + interval '1' month";

/// TPC-H Q3 (lineitem joined with orders ⋈ customer, which DataFusion joins on the CPU;
/// grouped by the join key and two orders columns, so one GPU group per lookup row).
pub const Q3: &str = "select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, \
    o_orderdate, o_shippriority from customer, orders, lineitem \
    where c_mktsegment = 'BUILDING' and c_custkey = o_custkey and l_orderkey = o_orderkey \
    and o_orderdate < date '1995-03-15' and l_shipdate > date '1995-03-15' \
    group by l_orderkey, o_orderdate, o_shippriority \
    order by revenue desc, o_orderdate limit 10";

/// TPC-H Q10 (orders and customer ⋈ nation as two lookup sides, customer probed by the
/// gathered `o_custkey`; customer and nation group keys, so one group per customer row).
pub const Q10: &str =
    "select c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) as revenue, \
    c_acctbal, n_name, c_address, c_phone, c_comment from customer, orders, lineitem, nation \
    where c_custkey = o_custkey and l_orderkey = o_orderkey \
    and o_orderdate >= date '1993-10-01' and o_orderdate < date '1993-10-01' + interval '3' month \
    and l_returnflag = 'R' and c_nationkey = n_nationkey \
    group by c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment \
    order by revenue desc limit 20";

/// TPC-H Q5: three lookup sides, orders probed by `l_orderkey`, customer by the gathered
/// `o_custkey` and supplier ⋈ nation ⋈ region by `l_suppkey`; the GPU compares the second
/// key of the supplier join (`s_nationkey = c_nationkey`) across two of them and groups by
/// the supplier side's `n_name`.
pub const Q5: &str = "select n_name, sum(l_extendedprice * (1 - l_discount)) as revenue \
    from customer, orders, lineitem, supplier, nation, region \
    where c_custkey = o_custkey and l_orderkey = o_orderkey and l_suppkey = s_suppkey \
    and c_nationkey = s_nationkey and s_nationkey = n_nationkey and n_regionkey = r_regionkey \
    and r_name = 'ASIA' and o_orderdate >= date '1994-01-01' \
    and o_orderdate < date '1994-01-01' + interval '1' year \
    group by n_name order by revenue desc";

/// Not a TPC-H query: the ten costliest line items shipped from 1995 on, in a total order
/// (the primary key breaks ties), so every engine returns the same rows. DataFusion filters
/// and projects on the CPU; the GPU selects the ten rows (`GpuTopKExec`).
pub const TOPK: &str = "select l_orderkey, l_linenumber, l_extendedprice, l_shipdate \
    from lineitem where l_shipdate >= date '1995-01-01' \
    order by l_extendedprice desc, l_orderkey, l_linenumber limit 10";

/// Not a TPC-H query: Q1's groups with three COUNT(DISTINCT)s over lineitem's foreign keys
/// (orders, parts, suppliers each group touches). DataFusion keeps a hash set per group and
/// argument; the GPU keeps a presence bitmap per group over each key's range (SF 10's 60M
/// order keys: 1.9M words a group).
pub const DISTINCT: &str = "select l_returnflag, l_linestatus, \
    count(distinct l_orderkey) as orders, count(distinct l_partkey) as parts, \
    count(distinct l_suppkey) as suppliers, count(*) as lines \
    from lineitem where l_shipdate <= date '1998-09-02' \
    group by l_returnflag, l_linestatus order by l_returnflag, l_linestatus";
