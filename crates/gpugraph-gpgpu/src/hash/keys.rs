//! Wider keys onto the u32 hash keys: a [`KeyMapping`] chosen over every key of both join
//! sides, or a [`KeyRangeError`] naming the extreme key no mapping holds.
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

/// Keys no mapping holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("key {value} fits neither 0..=4294967295 nor -2147483648..=2147483647 together with the other keys (hash keys are 32-bit)")]
pub struct KeyRangeError {
    /// The smallest or largest key, whichever no mapping holds.
    pub value: i128,
}

impl KeyMapping {
    /// The mapping of keys whose smallest is `min` and largest `max` (over both join sides,
    /// valid rows only): [`KeyMapping::Unsigned`] when both fit `0..=u32::MAX`, else
    /// [`KeyMapping::Signed`] when both fit i32; otherwise the extreme that fits neither is
    /// the error.
    pub fn for_range(min: i128, max: i128) -> Result<Self, KeyRangeError> {
        if Self::Unsigned.holds(min) && Self::Unsigned.holds(max) {
            return Ok(Self::Unsigned);
        }
        if Self::Signed.holds(min) && Self::Signed.holds(max) {
            return Ok(Self::Signed);
        }
        let value = if min < 0 && !Self::Signed.holds(min) {
            min
        } else {
            max
        };
        Err(KeyRangeError { value })
    }

    /// Whether `value` is in this mapping's range.
    pub fn holds(self, value: i128) -> bool {
        match self {
            Self::Unsigned => (0..=i128::from(u32::MAX)).contains(&value),
            Self::Signed => (i128::from(i32::MIN)..=i128::from(i32::MAX)).contains(&value),
        }
    }

    /// The u32 key of `value`; `None` outside the mapping's range.
    pub fn map(self, value: i128) -> Option<u32> {
        let key = match self {
            Self::Unsigned => value as u32,
            Self::Signed => value as i32 as u32,
        };
        self.holds(value).then_some(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mappings_are_chosen_over_the_key_range_and_name_the_misfit() {
        let u = i128::from(u32::MAX);
        assert_eq!(KeyMapping::for_range(0, u), Ok(KeyMapping::Unsigned));
        assert_eq!(KeyMapping::Unsigned.map(u), Some(u32::MAX));
        assert_eq!(
            KeyMapping::for_range(i128::from(i32::MIN), 7),
            Ok(KeyMapping::Signed)
        );
        assert_eq!(KeyMapping::Signed.map(-1), Some(u32::MAX));
        assert_eq!(
            KeyMapping::for_range(-1, u),
            Err(KeyRangeError { value: u })
        );
        assert_eq!(
            KeyMapping::for_range(0, 1 << 32),
            Err(KeyRangeError { value: 1 << 32 })
        );
        assert_eq!(
            KeyMapping::for_range(-(1 << 40), 0),
            Err(KeyRangeError { value: -(1 << 40) })
        );
        assert_eq!(KeyMapping::Signed.map(1 << 31), None);
    }
}
