//! Tunables as text and their typed errors: every policy reads the `key=value,key=value`
//! syntax of the CLI's `--*-policy` flags ([`PolicySpec::apply`], and `FromStr` over the
//! policy's default), and a field outside its range is a [`PolicyError`] naming it.

use thiserror::Error;

/// A policy field outside its documented range.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{policy} policy: {field} {value} is not {expected}")]
pub struct PolicyError {
    /// Which policy ("reduce", "keyed", "mask").
    pub policy: &'static str,
    /// The field.
    pub field: &'static str,
    /// Its value.
    pub value: u64,
    /// Its documented range, e.g. "a power of two in 32..=1024".
    pub expected: &'static str,
}

impl PolicyError {
    /// `field` of `policy` with `value` outside `expected`.
    pub fn new(
        policy: &'static str,
        field: &'static str,
        value: u64,
        expected: &'static str,
    ) -> Self {
        Self {
            policy,
            field,
            value,
            expected,
        }
    }
}

/// `Ok` when `value` is a power of two in `range`, else the [`PolicyError`] of `field`.
pub(crate) fn power_of_two_in(
    policy: &'static str,
    field: &'static str,
    value: u32,
    range: std::ops::RangeInclusive<u32>,
    expected: &'static str,
) -> Result<(), PolicyError> {
    if range.contains(&value) && value.is_power_of_two() {
        Ok(())
    } else {
        Err(PolicyError::new(policy, field, value.into(), expected))
    }
}

/// `Ok` when `value` is in `range`, else the [`PolicyError`] of `field`.
pub(crate) fn within<T: PartialOrd + Into<u64> + Copy>(
    policy: &'static str,
    field: &'static str,
    value: T,
    range: std::ops::RangeInclusive<T>,
    expected: &'static str,
) -> Result<(), PolicyError> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(PolicyError::new(policy, field, value.into(), expected))
    }
}

/// A `key=value,…` policy spec that does not parse.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum PolicySpecError {
    /// A part without `=`.
    #[error("'{0}' is not key=value")]
    NotKeyValue(String),
    /// A value that is not a non-negative integer (or too large for its field).
    #[error("{key}: '{value}' is not a valid number for this key")]
    NotANumber {
        /// The key.
        key: String,
        /// The value as written.
        value: String,
    },
    /// A key the policy does not have.
    #[error("unknown key '{key}' (expected {expected})")]
    UnknownKey {
        /// The key as written.
        key: String,
        /// The policy's keys.
        expected: &'static str,
    },
}

/// A policy spec that does not parse, or parses to a policy outside its ranges.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum PolicyParseError<E: std::error::Error + 'static> {
    /// The text does not parse.
    #[error(transparent)]
    Spec(#[from] PolicySpecError),
    /// The policy it names is invalid.
    #[error(transparent)]
    Invalid(E),
}

/// A policy that reads `key=value` settings. Values are non-negative integers; booleans are
/// 0 or nonzero.
pub trait PolicySpec: Sized {
    /// The keys, for messages ("wg, vec4, …").
    const KEYS: &'static str;

    /// Sets `key` to `value`; `Ok(false)` when the policy has no such key.
    fn set(&mut self, key: &str, value: u64) -> Result<bool, PolicySpecError>;

    /// Applies every `key=value` of the comma-separated `spec` in order; `default` (or an
    /// empty spec) changes nothing.
    fn apply(&mut self, spec: &str) -> Result<(), PolicySpecError> {
        if spec.trim() == "default" {
            return Ok(());
        }
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| PolicySpecError::NotKeyValue(part.to_string()))?;
            let (key, value) = (key.trim(), value.trim());
            let number = value.parse::<u64>().map_err(|_| not_a_number(key, value))?;
            if !self.set(key, number)? {
                return Err(PolicySpecError::UnknownKey {
                    key: key.to_string(),
                    expected: Self::KEYS,
                });
            }
        }
        Ok(())
    }
}

fn not_a_number(key: &str, value: impl ToString) -> PolicySpecError {
    PolicySpecError::NotANumber {
        key: key.to_string(),
        value: value.to_string(),
    }
}

/// `value` as a u32 field `key`.
pub fn spec_u32(key: &str, value: u64) -> Result<u32, PolicySpecError> {
    u32::try_from(value).map_err(|_| not_a_number(key, value))
}

/// `Default` (the policy's `DEFAULT`) and `FromStr` (`DEFAULT` with the `key=value,…` settings
/// of the text, then `validate()`, whose error type is the second argument) for a policy that
/// implements [`PolicySpec`].
macro_rules! policy_from_str {
    ($policy:ty, $error:ty) => {
        impl Default for $policy {
            fn default() -> Self {
                Self::DEFAULT
            }
        }

        impl std::str::FromStr for $policy {
            type Err = $crate::kernel::PolicyParseError<$error>;

            /// The policy's `DEFAULT` with the `key=value,…` settings of `s`, validated.
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                use $crate::kernel::PolicySpec;
                let mut p = Self::DEFAULT;
                p.apply(s)?;
                p.validate()
                    .map_err($crate::kernel::PolicyParseError::Invalid)?;
                Ok(p)
            }
        }
    };
}
pub(crate) use policy_from_str;

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct P {
        a: u32,
        b: bool,
    }

    impl PolicySpec for P {
        const KEYS: &'static str = "a, b";
        fn set(&mut self, key: &str, value: u64) -> Result<bool, PolicySpecError> {
            match key {
                "a" => self.a = spec_u32(key, value)?,
                "b" => self.b = value != 0,
                _ => return Ok(false),
            }
            Ok(true)
        }
    }

    #[test]
    fn specs_apply_in_order_and_name_what_is_wrong() {
        let mut p = P::default();
        p.apply("a=3, b=1,a=4").unwrap();
        assert_eq!((p.a, p.b), (4, true));
        p.apply("default").unwrap();
        assert_eq!(p.a, 4);
        assert_eq!(p.apply("a"), Err(PolicySpecError::NotKeyValue("a".into())));
        assert!(matches!(
            p.apply("a=x"),
            Err(PolicySpecError::NotANumber { .. })
        ));
        assert!(matches!(
            p.apply("a=4294967296"),
            Err(PolicySpecError::NotANumber { .. })
        ));
        assert_eq!(
            p.apply("c=1"),
            Err(PolicySpecError::UnknownKey {
                key: "c".into(),
                expected: "a, b"
            })
        );
    }
}
