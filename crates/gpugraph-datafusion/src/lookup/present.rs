//! Key sets the device found itself: a semi or anti join's set side that runs as a GPU
//! aggregate (the presence bitmap of `count(distinct key)` over the side's filtered rows,
//! `exec/set.rs`) instead of being collected on the CPU. The bitmap stays the set's whole
//! description on the host (one bit per key of the span: 1.9M words for TPC-H SF 10's 60M
//! order keys); the device expands it into the key map (`kernel/keymap.wgsl`'s `expand`).
//!
//! A lookup side with payload columns found the same way (`plan/payload.rs`) adds a bitmap
//! per value a column can take; the device expands them into a key map whose lookup row is
//! the key's offset and columns indexed by it ([`LookupTable::from_payload_bits`]).

use super::{LookupTable, Valued, MAX_SPREAD, MIN_KEY_WORDS};
use crate::ir::Bounds;
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
            valued: Vec::new(),
        })
    }

    /// The payload side of keys `first_key + d` for each set bit `d` of `present`, joined on
    /// `key`, whose `rows` non-null keys (rows of the side with one) each have, in payload
    /// column `j`, the value word `w` of the entry `(w, bits)` of `columns[j]` whose bitmap
    /// `bits` (over the same keys) has bit `d` set. Its lookup row of key `first_key + d` is
    /// `d`, and each column holds a word per key of the span. Why the GPU cannot join with
    /// it: [`Self::from_bits`]'s reasons, a key held twice (more rows than keys: the join is
    /// not many-to-one) or a key without a value in some column (a NULL there, which lookup
    /// columns do not carry).
    pub fn from_payload_bits(
        key: String,
        first_key: i64,
        present: Vec<u32>,
        rows: u64,
        columns: Vec<Vec<(u32, Vec<u32>)>>,
    ) -> Result<Self, String> {
        let mut table = Self::from_bits(key, first_key, present)?;
        let keys = table.shape.keys as usize;
        let distinct = table.rows;
        if rows != distinct as u64 {
            return Err(format!(
                "the join key {} repeats values on the lookup side ({rows} rows, {distinct} keys), so the join is not many-to-one",
                table.key
            ));
        }
        let width = keys.div_ceil(32);
        let mut words = table.bits.take().unwrap_or_default();
        let mut values = Vec::new();
        let mut bitmaps = 1;
        for (j, column) in columns.iter().enumerate() {
            let mut found = 0;
            let mut bounds: Option<Bounds> = None;
            for (value, bits) in column {
                let mut bits = bits.clone();
                bits.resize(width, 0);
                let n: usize = bits.iter().map(|w| w.count_ones() as usize).sum();
                if n > 0 {
                    let v = *value as i32 as i128;
                    bounds = Some(bounds.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))));
                }
                found += n;
                words.extend(bits);
            }
            if found != distinct {
                return Err(format!(
                    "the lookup column {j} of the join on {} has {} nulls, which the GPU's lookups do not carry",
                    table.key,
                    distinct.saturating_sub(found)
                ));
            }
            table.valued.push(Valued {
                bitmap: bitmaps,
                values: column.len() as u32,
                value: 0,
            });
            bitmaps += column.len() as u32;
            values.extend(column.iter().map(|(v, _)| *v));
            table.bounds.push(bounds.unwrap_or((0, 0)));
            table.shape.columns.push((keys * (j + 1)) as u32);
        }
        // The value words follow the bitmaps.
        let mut at = words.len() as u32;
        for v in &mut table.valued {
            v.value = at;
            at += v.values;
        }
        words.extend(values);
        table.bits = Some(words);
        table.set = false;
        table.rows = keys;
        Ok(table)
    }

    /// Where each payload column's bitmaps and values are among [`Self::present`]'s words
    /// (empty unless the side is [`Self::from_payload_bits`]'s).
    pub fn valued(&self) -> &[Valued] {
        &self.valued
    }

    /// The presence bitmap of a key set found on the device ([`Self::from_bits`]).
    pub fn present(&self) -> Option<&[u32]> {
        self.bits.as_deref()
    }
}

/// Whether bit `d` of bitmap `b` (each `width` words) of `bits` is set.
fn bit(bits: &[u32], width: usize, b: usize, d: usize) -> bool {
    bits.get(b * width + d / 32)
        .is_some_and(|w| w >> (d % 32) & 1 == 1)
}

/// The lookup words of the presence bitmap `bits` over `keys` keys (the oracle of
/// `keymap.wgsl`'s `expand`): in the key map, 0 where a key is present for a key `set`, the
/// key's offset (its lookup row) for a payload side, [`NO_ROW`] elsewhere; then each payload
/// column's words (`valued`), a key's value by the bitmap its bit is in, 0 for a key absent.
pub(super) fn map_words(bits: &[u32], keys: u32, valued: &[Valued], set: bool) -> Vec<u32> {
    let keys = keys as usize;
    let width = keys.div_ceil(32);
    let mut words: Vec<u32> = (0..keys)
        .map(|d| match (bit(bits, width, 0, d), set) {
            (false, _) => NO_ROW,
            (true, true) => 0,
            (true, false) => d as u32,
        })
        .collect();
    for v in valued {
        words.extend((0..keys).map(|d| {
            (0..v.values as usize)
                .filter(|&i| bit(bits, width, v.bitmap as usize + i, d))
                .map(|i| bits[v.value as usize + i])
                .next_back()
                .unwrap_or(0)
        }));
    }
    words
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

    /// A payload side's map names each present key's offset, its columns hold each key's
    /// value (the bitmaps may be shorter or longer than the keys' span), its bounds are the
    /// values present; a repeated key or a NULL value is refused by name, and no keys is an
    /// empty side.
    #[test]
    fn payload_sides_from_bitmaps() {
        // Keys 10, 11, 13 present; column 0 is 7 for 10 and 13, -1 for 11; column 1 is 1
        // for 11 and 0 otherwise.
        let columns = vec![
            vec![(7, vec![0b1001, 0, 0]), (-1i32 as u32, vec![0b10])],
            vec![(1, vec![0b10]), (0, vec![0b1001])],
        ];
        let t = LookupTable::from_payload_bits("k".into(), 10, vec![0b1011], 3, columns.clone())
            .expect("a payload side");
        assert_eq!(
            (t.shape.first_key, t.shape.keys, t.rows, t.set),
            (10, 4, 4, false)
        );
        assert_eq!(t.bounds, [(-1, 7), (0, 1)]);
        assert_eq!(t.shape.columns, [4, 8]);
        let minus = -1i32 as u32;
        let want = [0, 1, NO_ROW, 3, 7, minus, 0, 7, 0, 1, 0, 0];
        assert_eq!(t.words().expect("words"), want);
        let why =
            LookupTable::from_payload_bits("k".into(), 10, vec![0b1011], 4, columns).unwrap_err();
        assert!(why.contains("(4 rows, 3 keys)"), "{why}");
        let nulls = vec![vec![(7, vec![0b1])]];
        let why = LookupTable::from_payload_bits("k".into(), 10, vec![0b11], 2, nulls).unwrap_err();
        assert!(why.contains("has 1 nulls"), "{why}");
        let empty = vec![vec![(7, vec![0])]];
        let t = LookupTable::from_payload_bits("k".into(), 10, vec![0], 0, empty).expect("empty");
        assert!(t.shape.empty && t.shape.keys == 0 && t.words().unwrap().is_empty());
    }
}
