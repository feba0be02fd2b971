//! The order-preserving uint32 codes of the sort's key types (`keys.wgsl` and the fused
//! `radix_common.wgsl` transform compute the same bits). Production code: the key nodes read
//! its constants; the CPU oracle (`cpu.rs`) re-exports it rather than the other way round.

use super::keys::{KeyType, SortOptions, SortOrder};

/// The code of every NaN float key: the largest code, so NaNs sort last in both directions.
pub const NAN_CODE: u32 = 0xffff_ffff;
/// The bits a NaN float key has in sorted output (its payload and sign are not kept).
pub const CANONICAL_NAN: u32 = 0x7fc0_0000;

/// Constants of the integer key codes (`keys.wgsl`'s `bias` and `flip`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyCode {
    /// Key type.
    pub key_type: KeyType,
    /// Direction.
    pub order: SortOrder,
    /// Added (wrapping) to int32 keys: `2^(key_bits-1)`, so the promised range starts at 0.
    pub bias: u32,
    /// XORed into the code for descending order: `2^key_bits - 1` (0 ascending).
    pub flip: u32,
}

impl KeyCode {
    /// The code of `key_type` under `options` (assumed checked: key_bits in 1..=32).
    pub fn new(key_type: KeyType, options: SortOptions) -> Self {
        let bits = options.key_bits.clamp(1, 32);
        let mask = u32::MAX >> (32 - bits);
        Self {
            key_type,
            order: options.order,
            bias: if key_type == KeyType::Int32 {
                1 << (bits - 1)
            } else {
                0
            },
            flip: if options.order == SortOrder::Descending {
                mask
            } else {
                0
            },
        }
    }

    /// The uint32 code of the key with bits `bits`: ascending codes are the requested order.
    pub fn encode(&self, bits: u32) -> u32 {
        if self.key_type != KeyType::Float32 {
            return bits.wrapping_add(self.bias) ^ self.flip;
        }
        if bits & 0x7fff_ffff > 0x7f80_0000 {
            return NAN_CODE;
        }
        let code = if bits & 0x8000_0000 != 0 {
            !bits
        } else {
            bits | 0x8000_0000
        };
        match self.order {
            SortOrder::Ascending => code,
            SortOrder::Descending => !code,
        }
    }

    /// The key bits of `code`: the inverse of [`KeyCode::encode`], except that every NaN comes
    /// back as [`CANONICAL_NAN`].
    pub fn decode(&self, code: u32) -> u32 {
        if self.key_type != KeyType::Float32 {
            return (code ^ self.flip).wrapping_sub(self.bias);
        }
        if code == NAN_CODE {
            return CANONICAL_NAN;
        }
        let c = match self.order {
            SortOrder::Ascending => code,
            SortOrder::Descending => !code,
        };
        if c & 0x8000_0000 != 0 {
            c & 0x7fff_ffff
        } else {
            !c
        }
    }
}
