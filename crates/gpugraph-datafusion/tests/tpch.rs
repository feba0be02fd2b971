//! TPC-H Q1 and Q6 (and three COUNT(DISTINCT)s over Q1's groups) over lineitem, Q14 and
//! other lookup joins of lineitem with part, Q12 with orders, Q3 and Q10 grouped by the
//! lookup side, Q5 over three lookup sides (SF 0.01, tpchgen-arrow), in memory and from
//! Parquet: the GPU session's answer equals DataFusion's CPU answer exactly, and the plan
//! runs on the GPU.

mod common;

use std::sync::Arc;

use common::{explain, gpu, same, sessions};
use gpugraph_datafusion::datafusion::arrow::record_batch::RecordBatch;
use gpugraph_datafusion::datafusion::datasource::MemTable;
use gpugraph_datafusion::datafusion::parquet::arrow::ArrowWriter;
use gpugraph_datafusion::datafusion::prelude::{ParquetReadOptions, SessionContext};
use gpugraph_datafusion::tpch::{DISTINCT, Q1, Q10, Q12, Q14, Q3, Q5, Q6};
use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    RegionGenerator, SupplierGenerator,
};
use tpchgen_arrow::{
    CustomerArrow, LineItemArrow, NationArrow, OrderArrow, PartArrow, RegionArrow, SupplierArrow,
};

/// A join with group keys, a predicate mixing both sides, and every aggregate over lookup
/// columns (a decimal, an integer).
const JOINED: &str = "select l_returnflag, sum(l_quantity * p_size) as s, count(*) as n, \
    min(p_retailprice) as lo, max(p_size) as hi, avg(p_retailprice) as mean \
    from lineitem join part on l_partkey = p_partkey \
    where p_brand = 'Brand#23' or (l_quantity > 45 and p_size < 10) \
    group by l_returnflag order by l_returnflag";

/// Group keys from both sides: a coded lineitem column and a part column, with every
/// aggregate.
const MIXED_KEYS: &str = "select l_returnflag, p_brand, count(*) as n, sum(l_quantity) as q, \
    min(l_extendedprice) as lo, max(p_size) as hi, avg(l_discount) as d \
    from lineitem join part on l_partkey = p_partkey where p_size < 20 \
    group by l_returnflag, p_brand order by l_returnflag, p_brand";

/// A left join: lineitem rows without a (small) part keep NULL part columns, which count,
/// sum, min and avg skip.
const LEFT: &str = "select l_returnflag, count(*) as n, count(p_size) as matched, \
    sum(p_size) as s, min(p_retailprice) as lo, avg(l_quantity + p_size) as mean \
    from lineitem left join (select * from part where p_size < 10) p on l_partkey = p_partkey \
    group by l_returnflag order by l_returnflag";

/// A lookup side with a join of its own and keys too sparse for the direct-addressed map:
/// the exec falls back at run time and runs the original plan, whose joins the lookup must
/// not have run before it.
const SPARSE: &str = "select sum(l_quantity) as q, count(*) as n, max(c_acctbal) as best \
    from lineitem join (select o_orderkey * 10000 as k, c_acctbal from orders \
    join customer on o_custkey = c_custkey where c_mktsegment = 'BUILDING') oc \
    on l_orderkey * 10000 = oc.k";

/// Group keys from two lookup sides: the GPU indexes groups by one side's rows, so the
/// aggregate stays on the CPU and says why.
const TWO_SIDED_GROUPS: &str = "select n_name, o_orderpriority, count(*) as n \
    from lineitem join orders on l_orderkey = o_orderkey \
    join supplier on l_suppkey = s_suppkey join nation on s_nationkey = n_nationkey \
    group by n_name, o_orderpriority order by n_name, o_orderpriority";

/// A split lookup input (orders ⋈ an unfiltered customer projection) whose dimension key
/// repeats (`c_custkey % 100`): the customer side is not many-to-one, so the exec runs
/// DataFusion's plan and names the key.
const SPLIT_REPEATED: &str = "select sum(l_quantity) as q, count(*) as n, max(c_acctbal) as best \
    from lineitem join (select o_orderkey, c_acctbal from orders \
    join (select c_custkey % 100 as ck, c_acctbal from customer) c on o_custkey = c.ck) oc \
    on l_orderkey = oc.o_orderkey";

/// A split lookup input whose link (the fact side's key into the dimension) has NULLs: the
/// GPU's lookup columns carry none, so the exec runs DataFusion's plan and says so.
const SPLIT_NULL_LINK: &str = "select sum(l_quantity) as q, count(*) as n, min(c_acctbal) as low \
    from lineitem join (select o_orderkey, c_acctbal from \
    (select o_orderkey, case when o_orderkey % 7 = 0 then null else o_custkey end as ck \
    from orders) o join customer on o.ck = c_custkey) oc on l_orderkey = oc.o_orderkey";

/// A lookup side whose key repeats: not many-to-one, so the exec runs DataFusion's plan.
const REPEATED: &str = "select sum(l_quantity) as q, count(*) as n from lineitem \
    join (select p_partkey % 100 as k from part) p on l_partkey = p.k";

fn orders() -> Vec<RecordBatch> {
    OrderArrow::new(OrderGenerator::new(0.01, 1, 1))
        .with_batch_size(4000)
        .collect::<Result<Vec<_>, _>>()
        .expect("tpchgen generates orders")
}

fn customer() -> Vec<RecordBatch> {
    CustomerArrow::new(CustomerGenerator::new(0.01, 1, 1))
        .with_batch_size(500)
        .collect::<Result<Vec<_>, _>>()
        .expect("tpchgen generates customer")
}

/// The small tables: nation, region, supplier.
fn dimensions() -> [(&'static str, Vec<RecordBatch>); 3] {
    let all = |b: Result<Vec<RecordBatch>, _>| b.expect("tpchgen generates a dimension");
    [
        (
            "nation",
            all(NationArrow::new(NationGenerator::new(0.01, 1, 1)).collect()),
        ),
        (
            "region",
            all(RegionArrow::new(RegionGenerator::new(0.01, 1, 1)).collect()),
        ),
        (
            "supplier",
            all(SupplierArrow::new(SupplierGenerator::new(0.01, 1, 1)).collect()),
        ),
    ]
}

fn part() -> Vec<RecordBatch> {
    PartArrow::new(PartGenerator::new(0.01, 1, 1))
        .with_batch_size(1000)
        .collect::<Result<Vec<_>, _>>()
        .expect("tpchgen generates part")
}

/// The joins run on the GPU with the same answers as the CPU; a repeated lookup key falls
/// back at run time and says so.
async fn check_joins(gpu_ctx: &SessionContext, cpu_ctx: &SessionContext) {
    // (query, lookup key, joins left to the CPU inside the lookup side)
    for (q, key, cpu_joins) in [
        (Q14, "p_partkey", 0),
        (JOINED, "p_partkey", 0),
        (Q12, "o_orderkey", 0),
        (Q3, "o_orderkey", 1),
        (Q10, "o_orderkey", 1),
        (MIXED_KEYS, "p_partkey", 0),
        (LEFT, "p_partkey", 0),
    ] {
        let placement = same(gpu_ctx, cpu_ctx, q).await;
        assert_eq!(placement.gpu, 1, "{q}: {placement:?}");
        assert!(placement.fallbacks.is_empty(), "{q}: {placement:?}");
        assert!(placement.cpu.is_empty(), "{q}: {placement:?}");
        // ORDER BY … LIMIT: the top-k of the final aggregate's groups on the GPU too.
        let limited = usize::from(q == Q3 || q == Q10);
        assert_eq!(placement.topk, limited, "{q}: {placement:?}");
        // Coded keys only, or the lookup side's key among the keys (Q3's l_orderkey, Q10's
        // c_custkey): finished without a merge. MIXED_KEYS groups by part's p_brand, which
        // many parts share.
        let unique = usize::from(q != MIXED_KEYS);
        assert_eq!(
            (placement.finalize, placement.merged),
            (unique, 0),
            "{q}: {placement:?}"
        );
        let text = explain(gpu_ctx, q).await;
        assert!(text.contains(&format!("lookup=[key={key}")), "{text}");
        assert_eq!(text.matches("HashJoinExec").count(), cpu_joins, "{text}");
    }
    // Q3's groups are its lookup rows, and its filtered customers stay joined on the CPU;
    // Q10's unfiltered customers are a lookup side of their own, probed by the gathered
    // o_custkey, with the nation join inside it.
    let text = explain(gpu_ctx, Q3).await;
    assert!(text.contains("gby=[lookup o_orderkey"), "{text}");
    assert!(!text.contains("lookup=[key=c_custkey"), "{text}");
    let text = explain(gpu_ctx, Q10).await;
    assert!(text.contains("lookup n_name"), "{text}");
    assert!(text.contains("lookup=[key=c_custkey"), "{text}");
    // Q5: three lookup sides (orders, customer probed by the gathered o_custkey, supplier),
    // the two dimension joins left to the CPU inside the supplier side, the groups by
    // supplier row.
    let placement = same(gpu_ctx, cpu_ctx, Q5).await;
    assert_eq!(placement.gpu, 1, "{placement:?}");
    assert!(placement.fallbacks.is_empty(), "{placement:?}");
    // Many suppliers share a nation: the groups repeat, DataFusion's final aggregate merges.
    assert_eq!(placement.finalize, 0, "{placement:?}");
    let text = explain(gpu_ctx, Q5).await;
    for key in ["o_orderkey", "c_custkey", "s_suppkey"] {
        assert!(text.contains(&format!("lookup=[key={key}")), "{text}");
    }
    assert!(text.contains("gby=[lookup n_name"), "{text}");
    assert_eq!(text.matches("HashJoinExec").count(), 2, "{text}");
    let placement = same(gpu_ctx, cpu_ctx, TWO_SIDED_GROUPS).await;
    assert_eq!(placement.gpu, 0, "{placement:?}");
    assert!(
        placement
            .cpu
            .iter()
            .any(|why| why.contains("two joins' lookup sides")),
        "{placement:?}"
    );
    let placement = same(gpu_ctx, cpu_ctx, SPARSE).await;
    assert_eq!(placement.gpu, 1, "{placement:?}");
    assert!(
        placement.fallbacks.iter().any(|f| f.contains("spans")),
        "{placement:?}"
    );
    // Split lookup inputs that break an assumption at run time fall back, naming why.
    for (q, why) in [
        (SPLIT_REPEATED, "repeats the value"),
        (SPLIT_NULL_LINK, "nulls"),
    ] {
        let text = explain(gpu_ctx, q).await;
        assert!(text.contains("lookup=[key=c"), "{q}: {text}");
        let placement = same(gpu_ctx, cpu_ctx, q).await;
        assert_eq!(placement.gpu, 1, "{q}: {placement:?}");
        assert!(
            placement.fallbacks.iter().any(|f| f.contains(why)),
            "{q}: {placement:?}"
        );
    }
    let placement = same(gpu_ctx, cpu_ctx, REPEATED).await;
    assert_eq!(placement.gpu, 1, "{placement:?}");
    assert!(
        placement
            .fallbacks
            .iter()
            .any(|f| f.contains("repeats the value")),
        "{placement:?}"
    );
}

fn lineitem() -> Vec<RecordBatch> {
    LineItemArrow::new(LineItemGenerator::new(0.01, 1, 1))
        .with_batch_size(8192)
        .collect::<Result<Vec<_>, _>>()
        .expect("tpchgen generates lineitem")
}

async fn check(gpu_ctx: &SessionContext, cpu_ctx: &SessionContext) {
    for q in [Q1, Q6, DISTINCT] {
        let placement = same(gpu_ctx, cpu_ctx, q).await;
        assert_eq!(placement.gpu, 1, "{q}: {placement:?}");
        assert!(placement.fallbacks.is_empty(), "{q}: {placement:?}");
        assert!(placement.cpu.is_empty(), "{q}: {placement:?}");
        // ORDER BY … LIMIT: the top-k of the final aggregate's groups on the GPU too.
        let limited = usize::from(q == Q3 || q == Q10);
        assert_eq!(placement.topk, limited, "{q}: {placement:?}");
        let text = explain(gpu_ctx, q).await;
        assert!(text.contains("GpuPartialAggregateExec: on=GPU"), "{text}");
        assert!(!text.contains("CpuFallbackExec"), "{text}");
    }
}

#[tokio::test]
async fn q1_q6_in_memory_match_the_cpu() {
    let gpu = gpu();
    let batches = lineitem();
    let schema = batches[0].schema();
    let (g, c) = sessions(&gpu);
    // Two partitions, as a multi-threaded scan would deliver them.
    let half = batches.len() / 2;
    let parts = vec![batches[..half].to_vec(), batches[half..].to_vec()];
    let mut others = vec![
        ("part", part()),
        ("orders", orders()),
        ("customer", customer()),
    ];
    others.extend(dimensions());
    for ctx in [&g, &c] {
        let table = MemTable::try_new(Arc::clone(&schema), parts.clone()).expect("table");
        ctx.register_table("lineitem", Arc::new(table))
            .expect("registers");
        for (name, batches) in &others {
            let table =
                MemTable::try_new(batches[0].schema(), vec![batches.clone()]).expect("table");
            ctx.register_table(*name, Arc::new(table))
                .expect("registers");
        }
    }
    check(&g, &c).await;
    check_joins(&g, &c).await;
    // The columns of the first runs stay GPU-resident: the next run converts nothing.
    let text = explain(&g, &format!("ANALYZE {Q6}")).await;
    assert!(text.contains("gpu_cache_hits=1"), "{text}");
}

#[tokio::test]
async fn q1_q6_from_parquet_match_the_cpu() {
    let gpu = gpu();
    let dir = tempfile::tempdir().expect("tempdir");
    let (g, c) = sessions(&gpu);
    let mut tables = vec![
        ("lineitem", lineitem()),
        ("part", part()),
        ("orders", orders()),
        ("customer", customer()),
    ];
    tables.extend(dimensions());
    for (name, batches) in tables {
        let path = dir.path().join(format!("{name}.parquet"));
        let file = std::fs::File::create(&path).expect("creates");
        let mut writer = ArrowWriter::try_new(file, batches[0].schema(), None).expect("writer");
        for b in &batches {
            writer.write(b).expect("writes");
        }
        writer.close().expect("closes");
        for ctx in [&g, &c] {
            ctx.register_parquet(
                name,
                path.to_str().expect("utf-8"),
                ParquetReadOptions::default(),
            )
            .await
            .expect("registers");
        }
    }
    check(&g, &c).await;
    check_joins(&g, &c).await;
    // Both queries' columns are flat, non-null and dictionary-encoded: the GPU expands the
    // pages itself.
    for q in [Q1, Q6] {
        let text = explain(&g, &format!("ANALYZE {q}")).await;
        assert!(text.contains("page_decode=1"), "{text}");
        assert!(!text.contains("page_decode_refused"), "{text}");
        // Q6 has no group keys: its row groups are aggregated as the scan hands them over.
        assert_eq!(text.contains("streamed_chunks="), q == Q6, "{text}");
    }
    // The queries above left the session's upload slabs idle: a scan of the same row
    // groups takes them all from the pool.
    let again = explain(&g, &format!("ANALYZE {Q6}")).await;
    assert!(again.contains("upload_slabs_created=0"), "{again}");
}
