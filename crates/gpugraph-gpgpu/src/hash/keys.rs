//! Wider keys onto the u32 hash keys: a [`KeyMapping`] chosen over every key of both join
//! sides, or a [`KeyRangeError`] naming the first key no mapping holds.
//!
//! The mappings are injective on their ranges, so equal u32 keys mean equal original keys:
//! [`KeyMapping::Unsigned`] keeps values in `0..=u32::MAX`, [`KeyMapping::Signed`] keeps the
//! two's-complement bits of values in `i32::MIN..=i32::MAX`. Mixing the two ranges would
//! send -1 and 4294967295 to the same key, so one mapping covers all keys or none does.

/// How keys become u32 hash keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyMapping {
    /// `value as u32` for values in `0..=u32::MAX`.
    Unsigned,
    /// The bits of `value as i32` for values in `i32::MIN..=i32::MAX`.
    Signed,
}

/// A key outside every mapping's range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("key {value} fits neither 0..=4294967295 nor -2147483648..=2147483647 together with the other keys (hash keys are 32-bit)")]
pub struct KeyRangeError {
    /// The first key found outside the chosen range.
    pub value: i128,
}

impl KeyMapping {
    /// The mapping of signed keys: [`KeyMapping::Unsigned`] when none is negative, else
    /// [`KeyMapping::Signed`]; the first key outside that range is the error.
    pub fn for_i64<I: Iterator<Item = i64> + Clone>(keys: I) -> Result<Self, KeyRangeError> {
        let negative = keys.clone().any(|k| k < 0);
        let mapping = if negative {
            Self::Signed
        } else {
            Self::Unsigned
        };
        match keys.map(i128::from).find(|&k| !mapping.holds(k)) {
            Some(value) => Err(KeyRangeError { value }),
            None => Ok(mapping),
        }
    }

    /// The mapping of unsigned keys: [`KeyMapping::Unsigned`] when every key fits.
    pub fn for_u64<I: Iterator<Item = u64>>(mut keys: I) -> Result<Self, KeyRangeError> {
        match keys.find(|&k| k > u64::from(u32::MAX)) {
            Some(k) => Err(KeyRangeError {
                value: i128::from(k),
            }),
            None => Ok(Self::Unsigned),
        }
    }

    /// Whether `value` is in this mapping's range.
    pub fn holds(self, value: i128) -> bool {
        match self {
            Self::Unsigned => (0..=i128::from(u32::MAX)).contains(&value),
            Self::Signed => (i128::from(i32::MIN)..=i128::from(i32::MAX)).contains(&value),
        }
    }

    /// The u32 key of `value`, which the mapping must hold (checked by the `for_*`
    /// constructors over the same keys); `None` outside its range.
    pub fn map(self, value: i128) -> Option<u32> {
        self.holds(value).then(|| match self {
            Self::Unsigned => value as u32,
            Self::Signed => value as i32 as u32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mappings_are_chosen_over_all_keys_and_name_the_first_misfit() {
        let k = [0i64, 5, 4_294_967_295];
        assert_eq!(
            KeyMapping::for_i64(k.iter().copied()),
            Ok(KeyMapping::Unsigned)
        );
        assert_eq!(KeyMapping::Unsigned.map(4_294_967_295), Some(u32::MAX));
        let k = [-1i64, 7, i64::from(i32::MIN)];
        assert_eq!(
            KeyMapping::for_i64(k.iter().copied()),
            Ok(KeyMapping::Signed)
        );
        assert_eq!(KeyMapping::Signed.map(-1), Some(u32::MAX));
        let k = [-1i64, 4_294_967_295];
        assert_eq!(
            KeyMapping::for_i64(k.iter().copied()),
            Err(KeyRangeError {
                value: 4_294_967_295
            })
        );
        assert_eq!(
            KeyMapping::for_u64([1u64, 1 << 32, 1 << 33].into_iter()),
            Err(KeyRangeError { value: 1 << 32 })
        );
        assert_eq!(KeyMapping::Signed.map(1 << 31), None);
    }
}
