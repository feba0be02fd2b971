//! `gpugraph info`: the selected adapter's [`Capabilities`](gpugraph_command::Capabilities) as
//! an aligned table or as JSON (the same field names either way), and every adapter, numbered
//! as `--devices` takes them.

use anyhow::{Context, Result};
use clap::Args;
use serde_json::{Map, Value};

use crate::gpu::Gpu;

/// Options of `gpugraph info`.
#[derive(Args)]
pub struct InfoArgs {
    /// Print the capabilities as one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Table sections: title and the capability fields they hold, in display order.
const SECTIONS: &[(&str, &[&str])] = &[
    (
        "adapter",
        &["backend", "adapter", "device_type", "driver", "driver_info"],
    ),
    (
        "limits",
        &[
            "max_buffer_size",
            "max_storage_buffer_binding_size",
            "max_storage_buffers_per_shader_stage",
            "max_uniform_buffer_binding_size",
            "min_storage_buffer_offset_alignment",
            "min_uniform_buffer_offset_alignment",
            "max_compute_workgroups_per_dimension",
            "max_compute_invocations_per_workgroup",
            "max_compute_workgroup_storage_size",
            "subgroup_min_size",
            "subgroup_max_size",
        ],
    ),
    (
        "features",
        &[
            "timestamp_query",
            "subgroups",
            "shader_f16",
            "indirect_validation",
        ],
    ),
];

/// Fields whose value is a byte count (shown with a binary unit as well).
const BYTE_FIELDS: &[&str] = &[
    "max_buffer_size",
    "max_storage_buffer_binding_size",
    "max_uniform_buffer_binding_size",
    "max_compute_workgroup_storage_size",
];

/// Runs `gpugraph info`.
pub fn run(args: &InfoArgs) -> Result<()> {
    let gpu = Gpu::open()?;
    let caps = gpu.ctx.capabilities();
    let adapters = gpugraph_command::adapter_list().context("listing the adapters")?;
    let Value::Object(mut fields) =
        serde_json::to_value(caps).context("serializing capabilities")?
    else {
        anyhow::bail!("capabilities did not serialize to a JSON object");
    };
    if args.json {
        fields.insert(
            "adapters".into(),
            serde_json::to_value(&adapters).context("serializing the adapter list")?,
        );
        println!("{}", serde_json::to_string_pretty(&fields)?);
        return Ok(());
    }
    print!("{}", render_table(&fields));
    print!("{}", render_adapters(&adapters));
    Ok(())
}

/// The numbered adapter list (what `--devices` takes), `*` marking those `all` means.
fn render_adapters(adapters: &[gpugraph_command::AdapterEntry]) -> String {
    let mut out = String::from("adapters (--devices N,M; * = --devices all)\n");
    for a in adapters {
        let star = if a.in_all { "*" } else { " " };
        out.push_str(&format!(
            "  {}{star} {} ({}, {})\n",
            a.index, a.name, a.backend, a.device_type
        ));
    }
    out
}

/// Renders the sections, then any field no section names (so new capabilities still show).
fn render_table(fields: &Map<String, Value>) -> String {
    let mut rows: Vec<(String, Vec<(String, String)>)> = Vec::new();
    let mut shown: Vec<&str> = Vec::new();
    for (title, keys) in SECTIONS {
        let entries: Vec<(String, String)> = keys
            .iter()
            .filter_map(|k| fields.get(*k).map(|v| (k.to_string(), show(k, v))))
            .collect();
        shown.extend(keys.iter().copied());
        rows.push((title.to_string(), entries));
    }
    let other: Vec<(String, String)> = fields
        .iter()
        .filter(|(k, _)| !shown.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), show(k, v)))
        .collect();
    if !other.is_empty() {
        rows.push(("other".into(), other));
    }
    let width = rows
        .iter()
        .flat_map(|(_, e)| e.iter().map(|(k, _)| k.len()))
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (title, entries) in rows {
        out.push_str(&title);
        out.push('\n');
        for (k, v) in entries {
            out.push_str(&format!("  {k:<width$}  {v}\n"));
        }
    }
    out
}

fn show(key: &str, value: &Value) -> String {
    match value {
        Value::String(s) if s.is_empty() => "-".into(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => if *b { "yes" } else { "no" }.into(),
        Value::Number(n) => match n.as_u64() {
            Some(bytes) if BYTE_FIELDS.contains(&key) => format!("{bytes} ({})", binary(bytes)),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// `bytes` with a binary unit, e.g. `2.0 GiB`.
fn binary(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_units() {
        assert_eq!(binary(512), "512 B");
        assert_eq!(binary(2 << 30), "2.0 GiB");
        assert_eq!(binary(16 * 1024), "16.0 KiB");
    }

    #[test]
    fn table_aligns_and_keeps_unknown_fields() {
        let mut m = Map::new();
        m.insert("backend".into(), Value::String("vulkan".into()));
        m.insert("max_buffer_size".into(), Value::from(1u64 << 30));
        m.insert("timestamp_query".into(), Value::Bool(true));
        m.insert("new_field".into(), Value::from(7));
        let t = render_table(&m);
        assert!(t.contains("  backend          vulkan\n"), "{t}");
        assert!(t.contains("max_buffer_size  1073741824 (1.0 GiB)"), "{t}");
        assert!(t.contains("timestamp_query  yes"), "{t}");
        assert!(t.contains("other\n  new_field        7"), "{t}");
    }
}
