//! Radix planning, pure arithmetic: tiles of a domain and the word layout of its scratch
//! buffer (tickets, digit histograms, per-tile digit status). Unit-tested without a GPU.

use super::policy::{SortPolicy, PASSES, RADIX};

/// Words before the histograms: one tile ticket counter per pass, then reserved words.
pub const HEADER_WORDS: u32 = 8;
/// First word of the four digit histograms (pass-major, `RADIX` words each); exclusive
/// prefix sums once the histogram node has run.
pub const HISTOGRAM_WORD: u32 = HEADER_WORDS;
/// First word of the tile status rows.
pub const STATUS_WORD: u32 = HISTOGRAM_WORD + PASSES * RADIX;

/// Tiles and scratch layout of one radix domain of `rows` keys.
///
/// Scratch words: `[tickets: PASSES | reserved | histograms: PASSES × RADIX | status: PASSES ×
/// tiles × RADIX]`; status word `(pass, tile, digit)` holds a 2-bit state (0 empty, 1 tile
/// count published, 2 inclusive prefix published) above a 30-bit count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RadixPlan {
    /// Keys in the domain.
    pub rows: u32,
    /// Keys per tile.
    pub tile_rows: u32,
    /// Tiles per pass (`ceil(rows / tile_rows)`).
    pub tiles: u32,
    /// Workgroups of the histogram pass.
    pub histogram_workgroups: u32,
}

impl RadixPlan {
    /// The plan for `rows` keys under `policy` (`rows` must fit the status count bits; the
    /// caller checks [`super::policy::MAX_RADIX_ROWS`]).
    pub fn new(rows: u32, policy: &SortPolicy) -> Self {
        let tile_rows = policy.tile_rows();
        let tiles = rows.div_ceil(tile_rows);
        Self {
            rows,
            tile_rows,
            tiles,
            histogram_workgroups: tiles.div_ceil(policy.histogram_tiles_per_workgroup),
        }
    }

    /// Word of pass `pass`'s tile ticket counter.
    pub fn ticket_word(pass: u32) -> u32 {
        pass
    }

    /// First word of pass `pass`'s digit histogram.
    pub fn histogram_word(pass: u32) -> u32 {
        HISTOGRAM_WORD + pass * RADIX
    }

    /// First word of pass `pass`'s tile status rows.
    pub fn status_word(&self, pass: u32) -> u64 {
        STATUS_WORD as u64 + pass as u64 * self.tiles as u64 * RADIX as u64
    }

    /// Scratch words this plan needs.
    pub fn scratch_words(&self) -> u64 {
        self.status_word(PASSES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_and_layout() {
        let p = SortPolicy::DEFAULT;
        let plan = RadixPlan::new(4097, &p);
        assert_eq!((plan.tiles, plan.histogram_workgroups), (2, 1));
        assert_eq!(plan.status_word(0), 8 + 1024);
        assert_eq!(plan.status_word(1), 8 + 1024 + 2 * 256);
        assert_eq!(plan.scratch_words(), 8 + 1024 + 4 * 2 * 256);
        let big = RadixPlan::new(100_000, &p);
        assert_eq!((big.tiles, big.histogram_workgroups), (25, 4));
        assert_eq!(RadixPlan::new(4096, &p).tiles, 1);
    }
}
