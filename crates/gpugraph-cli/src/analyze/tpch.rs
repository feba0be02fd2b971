//! `gpugraph generate-table --tpch TABLE --scale SF`: TPC-H tables from the `tpchgen` /
//! `tpchgen-arrow` generators (the DataFusion community's; built against arrow 60, ours),
//! written like the synthetic table: streamed in batches to a temporary, renamed on success.
//!
//! The table is generated in parts (one per core) by `tpchgen`'s own partitioning and
//! written in part order (row counts match the TPC-H sizes: SF 0.01 gives 60,175 lineitem and
//! 15,000 orders rows, checked by tests/join.rs); each part's thread blocks a few batches
//! ahead of the writer, so memory stays at a few batches per core.

use std::sync::mpsc;

use anyhow::{bail, Result};
use arrow_array::RecordBatch;
use arrow_schema::{ArrowError, SchemaRef};
use clap::ValueEnum;
use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    PartSuppGenerator, RegionGenerator, SupplierGenerator,
};
use tpchgen_arrow::{
    CustomerArrow, LineItemArrow, NationArrow, OrderArrow, PartArrow, PartSuppArrow, RegionArrow,
    SupplierArrow,
};

/// Rows per generated batch (and Parquet row group slice).
const TPCH_BATCH_ROWS: usize = 1 << 16;
/// Batches a part's thread may run ahead of the writer.
const AHEAD: usize = 4;

/// The TPC-H tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TpchTable {
    /// `lineitem` (6,000,000 rows per unit of scale).
    Lineitem,
    /// `orders` (1,500,000 per unit).
    Orders,
    /// `customer` (150,000 per unit).
    Customer,
    /// `part` (200,000 per unit).
    Part,
    /// `partsupp` (800,000 per unit).
    Partsupp,
    /// `supplier` (10,000 per unit).
    Supplier,
    /// `nation` (25 rows).
    Nation,
    /// `region` (5 rows).
    Region,
}

type Batches = Box<dyn Iterator<Item = Result<RecordBatch, ArrowError>> + Send>;

impl TpchTable {
    /// Approximate rows at scale `sf` (the free-space check's estimate).
    pub fn rows(self, sf: f64) -> u64 {
        let per_unit = match self {
            TpchTable::Lineitem => 6_000_000.0,
            TpchTable::Orders => 1_500_000.0,
            TpchTable::Customer => 150_000.0,
            TpchTable::Part => 200_000.0,
            TpchTable::Partsupp => 800_000.0,
            TpchTable::Supplier => 10_000.0,
            TpchTable::Nation => return 25,
            TpchTable::Region => return 5,
        };
        (per_unit * sf).ceil() as u64
    }

    /// Upper bound of the bytes one row takes on disk, uncompressed (comments dominate).
    pub fn max_bytes_per_row(self) -> u64 {
        match self {
            TpchTable::Lineitem => 200,
            TpchTable::Orders => 180,
            TpchTable::Customer | TpchTable::Supplier => 260,
            TpchTable::Part => 200,
            TpchTable::Partsupp => 240,
            TpchTable::Nation | TpchTable::Region => 200,
        }
    }

    /// Whether the generator splits into parts (the two fixed tables do not).
    fn parts(self, wanted: i32) -> i32 {
        match self {
            TpchTable::Nation | TpchTable::Region => 1,
            _ => wanted,
        }
    }

    /// The batches of part `part` (1-based) of `parts` at scale `sf`.
    fn part(self, sf: f64, part: i32, parts: i32) -> Batches {
        let n = TPCH_BATCH_ROWS;
        match self {
            TpchTable::Lineitem => Box::new(
                LineItemArrow::new(LineItemGenerator::new(sf, part, parts)).with_batch_size(n),
            ),
            TpchTable::Orders => {
                Box::new(OrderArrow::new(OrderGenerator::new(sf, part, parts)).with_batch_size(n))
            }
            TpchTable::Customer => Box::new(
                CustomerArrow::new(CustomerGenerator::new(sf, part, parts)).with_batch_size(n),
            ),
            TpchTable::Part => {
                Box::new(PartArrow::new(PartGenerator::new(sf, part, parts)).with_batch_size(n))
            }
            TpchTable::Partsupp => Box::new(
                PartSuppArrow::new(PartSuppGenerator::new(sf, part, parts)).with_batch_size(n),
            ),
            TpchTable::Supplier => Box::new(
                SupplierArrow::new(SupplierGenerator::new(sf, part, parts)).with_batch_size(n),
            ),
            TpchTable::Nation => {
                Box::new(NationArrow::new(NationGenerator::new(sf, part, parts)).with_batch_size(n))
            }
            TpchTable::Region => {
                Box::new(RegionArrow::new(RegionGenerator::new(sf, part, parts)).with_batch_size(n))
            }
        }
    }

    /// The table's schema (from its first, possibly empty, batch generator).
    pub fn schema(self) -> SchemaRef {
        use arrow_array::RecordBatchReader;
        match self {
            TpchTable::Lineitem => LineItemArrow::new(LineItemGenerator::new(0.0, 1, 1)).schema(),
            TpchTable::Orders => OrderArrow::new(OrderGenerator::new(0.0, 1, 1)).schema(),
            TpchTable::Customer => CustomerArrow::new(CustomerGenerator::new(0.0, 1, 1)).schema(),
            TpchTable::Part => PartArrow::new(PartGenerator::new(0.0, 1, 1)).schema(),
            TpchTable::Partsupp => PartSuppArrow::new(PartSuppGenerator::new(0.0, 1, 1)).schema(),
            TpchTable::Supplier => SupplierArrow::new(SupplierGenerator::new(0.0, 1, 1)).schema(),
            TpchTable::Nation => NationArrow::new(NationGenerator::new(0.0, 1, 1)).schema(),
            TpchTable::Region => RegionArrow::new(RegionGenerator::new(0.0, 1, 1)).schema(),
        }
    }
}

/// Checks the scale factor: finite, positive, at most 1,000.
pub fn check_scale(sf: f64) -> Result<()> {
    if !(sf.is_finite() && sf > 0.0 && sf <= 1000.0) {
        bail!("--scale {sf}: the TPC-H scale factor must be a number in (0, 1000]");
    }
    Ok(())
}

/// Generates `table` at scale `sf` and hands every batch, in part order, to `write`.
pub fn generate(
    table: TpchTable,
    sf: f64,
    write: &mut dyn FnMut(RecordBatch) -> Result<()>,
) -> Result<()> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let parts = table.parts(cores.clamp(1, 64) as i32);
    std::thread::scope(|scope| -> Result<()> {
        let mut receivers = Vec::new();
        for part in 1..=parts {
            let (tx, rx) = mpsc::sync_channel(AHEAD);
            receivers.push(rx);
            scope.spawn(move || {
                for batch in table.part(sf, part, parts) {
                    // The writer stopped (an error): stop generating.
                    if tx.send(batch).is_err() {
                        return;
                    }
                }
            });
        }
        // On an error the receivers drop, so every generating thread's send fails and the
        // scope joins them.
        for rx in receivers {
            for batch in rx {
                write(batch?)?;
            }
        }
        Ok(())
    })
}
