//! The lookup rows as they cross PCIe: one record of whole words per row, packing the row's
//! key-map word and each lookup column's value less its smallest value in as few bits as
//! the bounds allow. TPC-H Q12's orders at SF 10 are 15M rows of a 26-bit key word and two
//! 0/1 columns: one word a row instead of three (60 MB instead of 180 MB, the lookup's
//! largest cost after its evaluation). The device unpacks the records into the key map and
//! the column words (`kernel/keymap.wgsl`), so the lookup buffer's layout does not change.

use bytemuck::{Pod, Zeroable};
use datafusion::arrow::array::Array;

use super::LookupTable;

/// One lookup column's place in a record and in the lookup buffer (the shader's
/// `vec4<u32>`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Field {
    /// The column's first word in the lookup buffer (its row 0).
    pub at: u32,
    /// Its first bit in a record.
    pub bit: u32,
    /// Its width in bits (0 for a column of one value, at most 32).
    pub bits: u32,
    /// Its smallest value (i32 bits), which the record's value is relative to.
    pub lo: u32,
}

/// The record layout of one lookup side: bits `0..key_bits` hold the row's key-map word
/// (its key less the first key) or `none` for a null key, then each column's field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Records {
    /// Words per record.
    pub words: u32,
    /// Bits of the key-map word: enough for every word below the map's size and one more
    /// value, `none`.
    pub key_bits: u32,
    /// The key-map word of a null key (all `key_bits` ones; never a map word).
    pub none: u32,
    /// Each lookup column's field, in column order.
    pub fields: Vec<Field>,
}

/// Bits that hold every value in `0..=span`.
fn width(span: u64) -> u32 {
    64 - span.leading_zeros()
}

impl LookupTable {
    /// This side's record layout.
    pub fn records(&self) -> Records {
        let key_bits = width(self.shape.keys as u64);
        let none = if key_bits == 32 {
            u32::MAX
        } else {
            (1u32 << key_bits) - 1
        };
        let mut bit = key_bits;
        let fields = self
            .bounds
            .iter()
            .zip(&self.shape.columns)
            .map(|(&(lo, hi), &at)| {
                let bits = width((hi - lo) as u64);
                let field = Field {
                    at,
                    bit,
                    bits,
                    lo: lo as i32 as u32,
                };
                bit += bits;
                field
            })
            .collect();
        Records {
            words: bit.div_ceil(32).max(1),
            key_bits,
            none,
            fields,
        }
    }

    /// Writes the records of lookup rows `first..` into `out` (whole records, zeroed here),
    /// under `layout` ([`Self::records`]).
    pub fn fill_records(&self, layout: &Records, first: usize, out: &mut [u32]) {
        out.fill(0);
        let words = layout.words as usize;
        let rows = out.len() / words;
        if rows == 0 {
            return;
        }
        let first_key = self.shape.first_key;
        // The batch of row `first`, then batch by batch.
        let mut b = self.starts.partition_point(|&s| s <= first) - 1;
        for (row, record) in (first..).zip(out.chunks_exact_mut(words)) {
            while row >= self.starts[b] + self.parts[b].keys.len() {
                b += 1;
            }
            let part = &self.parts[b];
            let i = row - self.starts[b];
            let key = if part.keys.is_null(i) {
                layout.none
            } else {
                (part.keys.value(i) - first_key) as u32
            };
            put(record, 0, layout.key_bits, key);
            for (f, column) in layout.fields.iter().zip(&part.columns) {
                put(record, f.bit, f.bits, column.get(i).wrapping_sub(f.lo));
            }
        }
    }
}

/// ORs the low `bits` bits of `value` into `record` from bit `bit` on (a field may cross
/// into the next word).
fn put(record: &mut [u32], bit: u32, bits: u32, value: u32) {
    if bits == 0 {
        return;
    }
    let value = if bits == 32 {
        value
    } else {
        value & ((1 << bits) - 1)
    };
    let (w, s) = ((bit / 32) as usize, bit % 32);
    record[w] |= value << s;
    if s + bits > 32 {
        record[w + 1] |= value >> (32 - s);
    }
}

/// The inverse of [`put`]: the oracle of the shader's `field`.
#[cfg(test)]
pub(super) fn get(record: &[u32], bit: u32, bits: u32) -> u32 {
    if bits == 0 {
        return 0;
    }
    let (w, s) = ((bit / 32) as usize, bit % 32);
    let mut v = record[w] >> s;
    if s + bits > 32 {
        v |= record[w + 1] << (32 - s);
    }
    if bits < 32 {
        v &= (1 << bits) - 1;
    }
    v
}
