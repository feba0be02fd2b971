//! Several devices in one process: the numbered adapter list (`gpugraph info`) and contexts on
//! a chosen set of adapters (`--devices all|0,1`).
//!
//! The numbering is the order [`GpuContext::new`] ranks adapters in (discrete GPUs first, then
//! integrated, virtual, CPU), so adapter 0 is the one a one-device run takes. `all` means the
//! adapters of adapter 0's backend and kind: on a host with two H100s and Mesa's lavapipe, the
//! two H100s; a GPU a second backend lists again (Vulkan and GL) is not a second device.

use std::fmt;
use std::str::FromStr;

use crate::context::{listed_adapters, ContextError, ContextOptions, GpuContext};

/// Which adapters a multi-device run uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceSelection {
    /// Every adapter of the best adapter's backend and kind.
    All,
    /// These adapters of the numbered list, in this order. An index may repeat: two devices
    /// on one adapter, which exercises the multi-device path on a one-GPU machine.
    Indices(Vec<usize>),
}

/// A `--devices` value that is neither `all` nor a comma-separated list of adapter numbers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--devices '{given}': {why} (give `all` or adapter numbers such as 0,1; `gpugraph info` lists them)")]
pub struct ParseDeviceSelectionError {
    /// The value as given.
    pub given: String,
    /// What is wrong with it.
    pub why: String,
}

/// The most devices one selection may name: more contexts than this are a typo, not a host.
pub const MAX_DEVICES: usize = 64;

impl FromStr for DeviceSelection {
    type Err = ParseDeviceSelectionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let fail = |why: String| ParseDeviceSelectionError {
            given: s.to_string(),
            why,
        };
        let trimmed = s.trim();
        if trimmed.eq_ignore_ascii_case("all") {
            return Ok(Self::All);
        }
        if trimmed.is_empty() {
            return Err(fail("empty".into()));
        }
        let indices = trimmed
            .split(',')
            .map(|part| {
                let part = part.trim();
                part.parse::<usize>()
                    .map_err(|_| fail(format!("'{part}' is not an adapter number")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if indices.len() > MAX_DEVICES {
            return Err(fail(format!(
                "{} devices named; at most {MAX_DEVICES}",
                indices.len()
            )));
        }
        Ok(Self::Indices(indices))
    }
}

impl fmt::Display for DeviceSelection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::All => f.write_str("all"),
            Self::Indices(i) => {
                let parts: Vec<String> = i.iter().map(ToString::to_string).collect();
                f.write_str(&parts.join(","))
            }
        }
    }
}

/// One adapter of the numbered list.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct AdapterEntry {
    /// Its number (what `--devices` takes).
    pub index: usize,
    /// Adapter name, e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// Backend name, e.g. "vulkan".
    pub backend: String,
    /// "DiscreteGpu", "Cpu", ...
    pub device_type: String,
    /// Whether `--devices all` includes it.
    pub in_all: bool,
}

/// Every adapter the environment's backends list (`GPUGRAPH_ADAPTER` filters it), numbered
/// best first.
pub fn adapter_list() -> Result<Vec<AdapterEntry>, ContextError> {
    let options = ContextOptions::from_env();
    let (_, adapters) = listed_adapters(options.adapter.as_deref(), true)?;
    let infos: Vec<wgpu::AdapterInfo> = adapters.iter().map(wgpu::Adapter::get_info).collect();
    let all = all_of(&infos);
    Ok(infos
        .into_iter()
        .enumerate()
        .map(|(index, info)| AdapterEntry {
            index,
            name: info.name,
            backend: info.backend.to_str().to_string(),
            device_type: format!("{:?}", info.device_type),
            in_all: all.contains(&index),
        })
        .collect())
}

/// The numbers `all` stands for: adapter 0's backend and kind.
fn all_of(infos: &[wgpu::AdapterInfo]) -> Vec<usize> {
    let Some(best) = infos.first() else {
        return Vec::new();
    };
    infos
        .iter()
        .enumerate()
        .filter(|(_, i)| i.backend == best.backend && i.device_type == best.device_type)
        .map(|(n, _)| n)
        .collect()
}

impl GpuContext {
    /// One context per selected adapter, in selection order, each set up as
    /// [`GpuContext::with_options`] sets up its one (`options.adapter` filters the list before
    /// it is numbered). An index past the list is [`ContextError::NoSuchAdapter`].
    pub fn for_devices(
        selection: &DeviceSelection,
        options: &ContextOptions,
    ) -> Result<Vec<Self>, ContextError> {
        let (instance, adapters) =
            listed_adapters(options.adapter.as_deref(), !options.unvalidated_indirect)?;
        let infos: Vec<wgpu::AdapterInfo> = adapters.iter().map(wgpu::Adapter::get_info).collect();
        let indices = match selection {
            DeviceSelection::All => all_of(&infos),
            DeviceSelection::Indices(i) => i.clone(),
        };
        if indices.is_empty() {
            return Err(ContextError::NoSuchAdapter {
                index: 0,
                available: describe(&infos),
            });
        }
        indices
            .into_iter()
            .map(|index| {
                let adapter = adapters
                    .get(index)
                    .ok_or_else(|| ContextError::NoSuchAdapter {
                        index,
                        available: describe(&infos),
                    })?
                    .clone();
                let limits = adapter.limits();
                Self::create(
                    instance.clone(),
                    adapter,
                    limits,
                    options.pipeline_cache_dir.clone(),
                    !options.unvalidated_indirect,
                )
            })
            .collect()
    }
}

/// `N: name (backend)` for each adapter, for errors.
fn describe(infos: &[wgpu::AdapterInfo]) -> Vec<String> {
    infos
        .iter()
        .enumerate()
        .map(|(n, i)| format!("{n}: {} ({})", i.name, i.backend.to_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selections_parse_and_bad_ones_say_why() {
        assert_eq!("all".parse(), Ok(DeviceSelection::All));
        assert_eq!(" ALL ".parse(), Ok(DeviceSelection::All));
        assert_eq!("0".parse(), Ok(DeviceSelection::Indices(vec![0])));
        assert_eq!(
            "1, 0,0".parse(),
            Ok(DeviceSelection::Indices(vec![1, 0, 0]))
        );
        assert_eq!(DeviceSelection::Indices(vec![1, 0]).to_string(), "1,0");
        for (bad, says) in [
            ("", "empty"),
            ("0,,1", "'' is not"),
            ("-1", "'-1' is not"),
            ("gpu0", "'gpu0' is not"),
        ] {
            let e = bad.parse::<DeviceSelection>().unwrap_err();
            assert!(e.to_string().contains(says), "{bad}: {e}");
            assert!(e.to_string().contains("gpugraph info"), "{e}");
        }
        let many = vec!["0"; MAX_DEVICES + 1].join(",");
        let e = many.parse::<DeviceSelection>().unwrap_err();
        assert!(e.to_string().contains("at most 64"), "{e}");
    }
}
