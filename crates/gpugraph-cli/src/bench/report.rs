//! Shared bench output: timing statistics ([`Summary`]), aligned text tables ([`Table`]),
//! JSON files and progress lines on stderr.

use std::time::Duration;

use serde::Serialize;

pub use crate::output::{check_writable, ms, progress, write_json, Table};

/// Statistics of repeated measurements (all in the unit the caller chose).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Median (mean of the two middle samples for an even count).
    pub median: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// The samples in measurement order.
    pub samples: Vec<f64>,
}

impl Summary {
    /// Summarizes `samples`; all statistics are 0 when there are none.
    pub fn of(samples: &[f64]) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        Self {
            median: median(samples),
            min: samples.iter().copied().fold(f64::INFINITY, f64::min),
            max: samples.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            mean: samples.iter().sum::<f64>() / samples.len() as f64,
            samples: samples.to_vec(),
        }
    }

    /// `median [min-max]` with `decimals` digits, e.g. `12.3 [11.9-13.0]`; the bracket is
    /// left out for a single sample.
    pub fn show(&self, decimals: usize) -> String {
        if self.samples.len() <= 1 {
            format!("{:.decimals$}", self.median)
        } else {
            format!(
                "{:.d$} [{:.d$}-{:.d$}]",
                self.median,
                self.min,
                self.max,
                d = decimals
            )
        }
    }
}

/// Median of `values` (0 for none); NaNs sort last.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

/// `d` in microseconds.
pub fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// The JSON document every bench writes with `--json`: which bench, on which device, how
/// many repeats, and one entry per measured case in `rows` (the row type is the bench's own;
/// `bench/combine.py` reads `device` and `rows`).
#[derive(Serialize)]
pub struct BenchJson<'a, R: Serialize> {
    /// Bench name (`graph`, `scan`, ...).
    pub bench: &'a str,
    /// Adapter name and backend, e.g. `NVIDIA H200 (vulkan)`.
    pub device: String,
    /// The full capabilities report of the device.
    pub capabilities: &'a gpugraph_command::Capabilities,
    /// Measured runs per case.
    pub repeat: u32,
    /// One entry per case.
    pub rows: &'a [R],
}

impl<'a, R: Serialize> BenchJson<'a, R> {
    /// The document for `bench` on the device described by `capabilities`.
    pub fn new(
        bench: &'a str,
        capabilities: &'a gpugraph_command::Capabilities,
        repeat: u32,
        rows: &'a [R],
    ) -> Self {
        Self {
            bench,
            device: format!("{} ({})", capabilities.adapter, capabilities.backend),
            capabilities,
            repeat,
            rows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_statistics() {
        let s = Summary::of(&[3.0, 1.0, 2.0, 10.0]);
        assert_eq!(s.median, 2.5);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 10.0);
        assert_eq!(s.mean, 4.0);
        assert_eq!(s.show(1), "2.5 [1.0-10.0]");
        assert_eq!(Summary::of(&[7.0]).show(2), "7.00");
        assert_eq!(Summary::of(&[]), Summary::default());
        assert_eq!(median(&[5.0, 1.0, 3.0]), 3.0);
    }
}
