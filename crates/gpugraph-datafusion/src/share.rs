//! Splitting one GPU aggregate's input over several devices (`gpugraph sql --devices`).
//!
//! Each device runs the same partial aggregate over its [`Share`] of the source, and
//! DataFusion's final aggregate merges their state rows as it merges CPU partitions'. A share
//! is decided from the source's structure, never from timing, so a cached share finds the same
//! rows on every run:
//! - Parquet read by the direct scan: whole row groups, each given to the share with the
//!   fewest rows so far (largest first), so shares differ by at most one row group's rows;
//! - an in-memory table: batch `j` goes to share `j mod n`;
//! - any other source: its output partitions `i` with `i mod n` equal to the share's index,
//!   all shares executing the one plan instance (a repartition deals each batch to one of
//!   them).

use std::sync::Arc;

use datafusion::datasource::memory::{DataSourceExec, MemorySourceConfig};
use datafusion::error::Result;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::ExecutionPlan;

/// Which part of a source one device reads: share `index` of `of`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Share {
    /// This share's number, `0..of`.
    pub index: usize,
    /// How many shares the source is split into (1: the whole source).
    pub of: usize,
}

impl Share {
    /// The whole source.
    pub const WHOLE: Self = Self { index: 0, of: 1 };

    /// Whether this share is the whole source.
    pub fn is_whole(self) -> bool {
        self.of <= 1
    }

    /// Whether output partition `partition` of a shared plan belongs to this share.
    pub fn takes(self, partition: usize) -> bool {
        self.is_whole() || partition % self.of == self.index
    }

    /// Which of `rows.len()` row groups (with these row counts, in the source's order) this
    /// share reads: largest first, each to the share with the fewest rows so far, ties to the
    /// lower share and the earlier row group.
    pub fn row_groups(self, rows: &[u64]) -> Vec<bool> {
        if self.is_whole() {
            return vec![true; rows.len()];
        }
        let mut order: Vec<usize> = (0..rows.len()).collect();
        order.sort_by_key(|&g| std::cmp::Reverse(rows[g]));
        let mut load = vec![0u64; self.of];
        let mut mine = vec![false; rows.len()];
        for g in order {
            let (to, _) = load
                .iter()
                .enumerate()
                .min_by_key(|&(s, &l)| (l, s))
                .expect("a share count of at least one");
            load[to] += rows[g];
            mine[g] = to == self.index;
        }
        mine
    }
}

/// The in-memory table under `source` (through round-robin repartitions) split for `share`:
/// a table of its batches `j` with `j mod of == index`, same schema and projection. `None`
/// when `source` is no such table, or one with a row limit (a limit is not divisible).
pub fn memory_share(
    source: &Arc<dyn ExecutionPlan>,
    share: Share,
) -> Option<Result<Arc<dyn ExecutionPlan>>> {
    let mut plan = source;
    while let Some(r) = plan.downcast_ref::<RepartitionExec>() {
        plan = r.input();
    }
    let exec = plan.downcast_ref::<DataSourceExec>()?;
    let memory = exec.data_source().downcast_ref::<MemorySourceConfig>()?;
    if datafusion::datasource::source::DataSource::fetch(memory).is_some() {
        return None;
    }
    let batches: Vec<_> = memory
        .partitions()
        .iter()
        .flatten()
        .enumerate()
        .filter(|(j, _)| share.takes(*j))
        .map(|(_, b)| b.clone())
        .collect();
    Some(
        MemorySourceConfig::try_new_exec(
            &[batches],
            memory.original_schema(),
            memory.projection().clone(),
        )
        .map(|e| e as Arc<dyn ExecutionPlan>),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_groups_go_to_one_share_each_and_balance() {
        let rows = [10, 30, 30, 5, 0, 20, 7];
        for of in 1..=4 {
            let shares: Vec<Vec<bool>> = (0..of)
                .map(|index| Share { index, of }.row_groups(&rows))
                .collect();
            let mut sums = vec![0u64; of];
            for g in 0..rows.len() {
                let owners: Vec<usize> = (0..of).filter(|&s| shares[s][g]).collect();
                assert_eq!(owners.len(), 1, "row group {g} of {of} shares");
                sums[owners[0]] += rows[g];
            }
            let (lo, hi) = (sums.iter().min().unwrap(), sums.iter().max().unwrap());
            assert!(hi - lo <= 30, "{of} shares: {sums:?}");
        }
        let two = |index| Share { index, of: 2 }.row_groups(&rows);
        assert_eq!(two(0), [false, true, false, false, true, true, false]);
        assert_eq!(two(1), [true, false, true, true, false, false, true]);
        assert!(Share { index: 1, of: 3 }.row_groups(&[]).is_empty());
        assert_eq!(Share { index: 2, of: 3 }.row_groups(&[9]), [false]);
    }

    #[test]
    fn partitions_split_by_remainder() {
        let s = Share { index: 1, of: 3 };
        let taken: Vec<usize> = (0..8).filter(|&p| s.takes(p)).collect();
        assert_eq!(taken, [1, 4, 7]);
        assert!((0..5).all(|p| Share::WHOLE.takes(p)));
    }
}
