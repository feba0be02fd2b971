//! Narrow column slots: a chunk's slot whose values span less than 2^16 travels as 8- or
//! 16-bit offsets from its minimum (frame of reference), 4 or 2 values a word, and the
//! kernel's `load{c}` widens them back (`params.slots[c]`: base, shift, validity offset).
//!
//! Why: from host memory or Parquet, the upload is the aggregate's longest stage (TPC-H SF 10
//! on the H200, 2026-12-02: Q1's seven 32-bit slots are 1.7 GB; its flags and codes need a
//! byte, quantities, discounts, taxes and dates two), and a warm run reads fewer bytes too.
//! The packing is lossless by construction: the offsets of the chunk's bounds fit the width.

use crate::convert::Part;

/// How one slot of one chunk sits in its buffer (the kernel's `params.slots[c]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlotLayout {
    /// Added to every unpacked offset (the chunk's minimum, as u32 bits).
    pub base: u32,
    /// log2 of values per word: 0 (32-bit words, base 0), 1 (16-bit) or 2 (8-bit).
    pub shift: u32,
    /// Word index of the validity words (after the packed values).
    pub valid_at: u32,
}

impl SlotLayout {
    /// The layout of `rows` values within `bounds` (`None`: 32-bit words).
    pub fn new(rows: usize, bounds: Option<(i32, i32)>) -> Self {
        let (base, shift) = match bounds {
            Some((lo, hi)) if lo <= hi => {
                let span = (hi as i64 - lo as i64) as u64;
                if span < 1 << 8 {
                    (lo as u32, 2)
                } else if span < 1 << 16 {
                    (lo as u32, 1)
                } else {
                    (0, 0)
                }
            }
            _ => (0, 0),
        };
        let valid_at = rows.div_ceil(1 << shift) as u32;
        Self {
            base,
            shift,
            valid_at,
        }
    }

    /// The kernel's `vec4<u32>` of this slot.
    pub fn words(&self) -> [u32; 4] {
        [self.base, self.shift, self.valid_at, 0]
    }
}

/// A slot's parts read as one stream of words (values, then validity words).
pub(crate) struct Stream<'a> {
    parts: &'a [Part],
    /// First word of each part, and the total at the end.
    starts: Vec<usize>,
}

impl<'a> Stream<'a> {
    /// The stream of `parts`.
    pub fn new(parts: &'a [Part]) -> Self {
        let mut starts = Vec::with_capacity(parts.len() + 1);
        let mut at = 0;
        starts.push(0);
        for p in parts {
            at += p.len();
            starts.push(at);
        }
        Self { parts, starts }
    }

    /// Words in the stream.
    pub(crate) fn len(&self) -> usize {
        *self.starts.last().unwrap_or(&0)
    }

    /// Words `at .. at + out.len()` (within the stream) into `out`.
    pub fn read(&self, at: usize, out: &mut [u32]) {
        let end = at + out.len();
        // The part holding word `at`: the last start at or before it.
        let mut p = self.starts.partition_point(|&s| s <= at).saturating_sub(1);
        let mut done = at;
        while done < end {
            let (start, stop) = (self.starts[p], self.starts[p + 1]);
            let take = stop.min(end) - done;
            if take > 0 {
                self.parts[p].write(done - start, &mut out[done - at..done - at + take]);
            }
            done += take;
            p += 1;
        }
    }
}

/// Packs `values` (whole words of offsets, starting at a word boundary) into `out`:
/// `value - base` in `32 >> shift` bits, lowest lane first; lanes past `values` are zero.
pub fn pack(values: &[u32], layout: SlotLayout, out: &mut [u32]) {
    let per = 1usize << layout.shift;
    let bits = 32 >> layout.shift;
    for (w, o) in out.iter_mut().enumerate() {
        let lanes = values.get(w * per..((w + 1) * per).min(values.len()));
        *o = lanes.map_or(0, |lanes| {
            lanes.iter().enumerate().fold(0u32, |acc, (i, &v)| {
                acc | (v.wrapping_sub(layout.base) << (i * bits))
            })
        });
    }
}

/// Value `row` of packed words (the kernel's `load{c}`; the tests' oracle).
#[cfg(test)]
pub fn unpack(words: &[u32], layout: SlotLayout, row: usize) -> u32 {
    if layout.shift == 0 {
        return words[row];
    }
    let bits = 32 >> layout.shift;
    let lane = row & ((1 << layout.shift) - 1);
    let w = words[row >> layout.shift];
    ((w >> (lane * bits)) & ((1u32 << bits) - 1)).wrapping_add(layout.base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_choose_the_narrowest_width_that_holds_the_span() {
        assert_eq!(SlotLayout::new(10, None).shift, 0);
        assert_eq!(SlotLayout::new(10, Some((5, 5))).shift, 2);
        assert_eq!(SlotLayout::new(10, Some((-128, 127))).shift, 2);
        assert_eq!(SlotLayout::new(10, Some((-128, 128))).shift, 1);
        assert_eq!(
            SlotLayout::new(10, Some((i32::MIN, i32::MIN + 65_535))).shift,
            1
        );
        assert_eq!(SlotLayout::new(10, Some((0, 65_536))).shift, 0);
        assert_eq!(SlotLayout::new(10, Some((i32::MIN, i32::MAX))).shift, 0);
        // Validity follows the packed words: 10 bytes take 3 words, 10 halves 5.
        assert_eq!(SlotLayout::new(10, Some((0, 1))).valid_at, 3);
        assert_eq!(SlotLayout::new(10, Some((0, 300))).valid_at, 5);
        assert_eq!(SlotLayout::new(10, None).valid_at, 10);
    }

    #[test]
    fn packed_values_unpack_to_themselves_at_every_width_and_length() {
        for (lo, hi) in [
            (-3, 250),
            (-40_000, 20_000),
            (i32::MIN, i32::MIN + 200),
            (7, 7),
        ] {
            for n in [0usize, 1, 2, 3, 4, 5, 31, 33, 1001] {
                let values: Vec<u32> = (0..n)
                    .map(|i| (lo as i64 + (i as i64 * 7919) % (hi as i64 - lo as i64 + 1)) as u32)
                    .collect();
                let layout = SlotLayout::new(n, Some((lo, hi)));
                let mut out = vec![0xdead_beef; layout.valid_at as usize];
                pack(&values, layout, &mut out);
                for (r, &v) in values.iter().enumerate() {
                    assert_eq!(unpack(&out, layout, r), v, "row {r} of {n} in {lo}..={hi}");
                }
            }
        }
    }

    #[test]
    fn a_stream_reads_across_parts() {
        let parts = vec![
            Part::Words(vec![1, 2, 3]),
            Part::Words(vec![]),
            Part::Codes {
                codes: vec![1, 0],
                map: vec![40, 50],
            },
            Part::Words(vec![6]),
        ];
        let stream = Stream::new(&parts);
        assert_eq!(stream.len(), 6);
        for at in 0..6 {
            for end in at..=6 {
                let mut out = vec![0; end - at];
                stream.read(at, &mut out);
                assert_eq!(out, [1, 2, 3, 50, 40, 6][at..end], "{at}..{end}");
            }
        }
    }
}
