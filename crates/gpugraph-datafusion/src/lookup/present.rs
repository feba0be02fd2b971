//! Key sets the device found itself: a semi or anti join's set side that runs as a GPU
//! aggregate (the presence bitmap of `count(distinct key)` over the side's filtered rows,
//! `exec/set.rs`) instead of being collected on the CPU. The bitmap stays the set's whole
//! description on the host (one bit per key of the span: 1.9M words for TPC-H SF 10's 60M
//! order keys); the device expands it into the key map (`kernel/keymap.wgsl`'s `expand`).

use super::{LookupTable, MAX_SPREAD, MIN_KEY_WORDS};
use crate::program::{LookupShape, NO_ROW};

impl LookupTable {
    /// The key set of keys `first_key + d` for each set bit `d` of `bits` (bit `d % 32` of
    /// word `d / 32`), joined on `key` (for errors), or why the GPU cannot test membership
    /// in it: a first key or span past the probe's 32 bits, or a span sparser than a
    /// collected side may be ([`MAX_SPREAD`] words per key, at least [`MIN_KEY_WORDS`]).
    /// NULL keys are not in it: a semi or anti join's set never matches them, so such a
    /// side never serves a null-aware anti join (whose answer depends on them).
    pub fn from_bits(key: String, first_key: i64, bits: Vec<u32>) -> Result<Self, String> {
        let present: usize = bits.iter().map(|w| w.count_ones() as usize).sum();
        // The span ends at the last key present: the map need not cover the bitmap's tail.
        let keys = bits
            .iter()
            .rposition(|&w| w != 0)
            .map_or(0, |w| 32 * w + 32 - bits[w].leading_zeros() as usize);
        let last = first_key + keys as i64 - 1;
        if present > 0 && (first_key < i32::MIN as i64 || last > i32::MAX as i64) {
            return Err(format!(
                "the join key {key} reaches [{first_key}, {last}], past the GPU's 32 bits"
            ));
        }
        let allowed = (present * MAX_SPREAD).max(MIN_KEY_WORDS);
        if keys > allowed {
            return Err(format!(
                "the join key {key} spans {keys} values over {present} keys; the GPU's direct-addressed lookup takes at most {allowed}"
            ));
        }
        let mut bits = bits;
        bits.truncate(keys.div_ceil(32));
        Ok(LookupTable {
            parts: Vec::new(),
            shape: LookupShape {
                base: 0,
                first_key: if present > 0 { first_key } else { 0 },
                keys: keys as u32,
                columns: Vec::new(),
                null_keys: false,
                empty: present == 0,
            },
            bounds: Vec::new(),
            rows: present,
            groups: Vec::new(),
            starts: Vec::new(),
            group_types: Vec::new(),
            key,
            set: true,
            bits: Some(bits),
        })
    }

    /// The presence bitmap of a key set found on the device ([`Self::from_bits`]).
    pub fn present(&self) -> Option<&[u32]> {
        self.bits.as_deref()
    }
}

/// The key map of the presence bitmap `bits` over `keys` keys: 0 where a key is present,
/// [`NO_ROW`] elsewhere (the oracle of `keymap.wgsl`'s `expand`).
pub(super) fn map_words(bits: &[u32], keys: u32) -> Vec<u32> {
    (0..keys as usize)
        .map(|d| {
            let set = bits.get(d / 32).is_some_and(|w| w >> (d % 32) & 1 == 1);
            if set {
                0
            } else {
                NO_ROW
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The span ends at the last key present, the map marks exactly the set bits, and a
    /// span past 32 bits or sparser than a collected side may be is refused by name.
    #[test]
    fn key_sets_from_bitmaps() {
        let t = LookupTable::from_bits("k".into(), 10, vec![0b1001, 0]).expect("a set");
        assert_eq!((t.shape.first_key, t.shape.keys, t.rows), (10, 4, 2));
        assert_eq!(t.words().expect("words"), [0, NO_ROW, NO_ROW, 0]);
        let t = LookupTable::from_bits("k".into(), 10, vec![0, 1 << 31]).expect("a set");
        assert_eq!((t.shape.keys, t.rows), (64, 1));
        assert_eq!(t.words().expect("words")[63], 0);
        let none = LookupTable::from_bits("k".into(), 5, vec![0; 3]).expect("an empty set");
        assert!(none.shape.empty && none.shape.keys == 0 && none.words().unwrap().is_empty());
        let why = LookupTable::from_bits("k".into(), i32::MAX as i64 - 1, vec![0b100]).unwrap_err();
        assert!(why.contains("past the GPU's 32 bits"), "{why}");
        let mut sparse = vec![0u32; (MIN_KEY_WORDS + 64) / 32];
        sparse[0] = 1;
        *sparse.last_mut().unwrap() = 1 << 31;
        let why = LookupTable::from_bits("k".into(), 0, sparse).unwrap_err();
        assert!(why.contains("spans 67108928 values over 2 keys"), "{why}");
    }
}
