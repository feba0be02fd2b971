//! Sort test scaffolding shared by sort.rs, sort_keys.rs and sort_kernel.rs: the payload
//! modes, one [`Sort`] declared over poisoned output buffers (poisoned rows before and after
//! the output view), and its check against the CPU oracle (`cpu::sort_typed`), values being
//! source rows so that every value check is a stability check.

use gpugraph_command::wgpu;
use gpugraph_command::{CommandGraph, GpuContext};
use gpugraph_gpgpu::sort::cpu;
use gpugraph_gpgpu::{KeyType, Sort, SortOptions, SortPayload, SortPolicy};

use super::{import_typed, import_view, read_buffer, upload, POISON};

/// What moves with the keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Keys only.
    Keys,
    /// Values `row ^ VALUE_MASK` (a stability check that is not the identity).
    Pairs,
    /// Generated source rows.
    Argsort,
}

pub const MODES: [Mode; 3] = [Mode::Keys, Mode::Pairs, Mode::Argsort];

/// Pair values are `row ^ VALUE_MASK`.
pub const VALUE_MASK: u32 = 0x5555_0000;

/// Poisoned rows after each output view.
pub const GUARD: usize = 3;

/// One sort to declare: keys (bits of `key_type`), options, payload, where the views sit in
/// their buffers (inputs at `in_offset`, unaligned offsets take the scalar load paths;
/// outputs at `out_offset` after as many poisoned rows) and the policy.
pub struct SortSpec<'a> {
    pub name: &'a str,
    pub keys: Vec<u32>,
    pub key_type: KeyType,
    pub options: SortOptions,
    pub mode: Mode,
    pub in_offset: usize,
    pub out_offset: usize,
    pub policy: Option<SortPolicy>,
}

impl<'a> SortSpec<'a> {
    /// uint32 keys ascending, views at offset 0, the device's default policy.
    pub fn new(name: &'a str, keys: Vec<u32>, mode: Mode) -> Self {
        Self {
            name,
            keys,
            key_type: KeyType::Uint32,
            options: SortOptions::default(),
            mode,
            in_offset: 0,
            out_offset: 0,
            policy: None,
        }
    }
}

/// A declared sort and what its check needs after the run.
pub struct SortCase {
    pub label: String,
    pub keys: Vec<u32>,
    pub key_type: KeyType,
    pub options: SortOptions,
    pub mode: Mode,
    pub out_keys: wgpu::Buffer,
    pub out_values: Option<wgpu::Buffer>,
    pub offset: usize,
}

/// Declares `spec` in `g` (panics, naming the sort, if the sort rejects it).
pub fn declare_sort(ctx: &GpuContext, g: &mut CommandGraph, spec: SortSpec<'_>) -> SortCase {
    let SortSpec {
        name,
        keys,
        key_type,
        options,
        mode,
        in_offset,
        out_offset,
        policy,
    } = spec;
    let n = keys.len();
    let padded = |data: &[u32]| {
        let mut v = vec![POISON; in_offset];
        v.extend_from_slice(data);
        v.extend([POISON; GUARD]);
        v
    };
    let poisoned = || upload(ctx, &vec![POISON; out_offset + n + GUARD]);
    let (inn, out, len) = (in_offset as u64, out_offset as u64, n as u64);
    let fmt = key_type.format();
    let kb = upload(ctx, &padded(&keys));
    let k = import_typed(g, &format!("{name}.k"), &kb, fmt, inn, len);
    let okb = poisoned();
    let ok = import_typed(g, &format!("{name}.ok"), &okb, fmt, out, len);
    let mut out_values = None;
    let payload = match mode {
        Mode::Keys => SortPayload::KeysOnly,
        Mode::Pairs => {
            let vals: Vec<u32> = (0..n as u32).map(|i| i ^ VALUE_MASK).collect();
            let vb = upload(ctx, &padded(&vals));
            let input = import_view(g, &format!("{name}.v"), &vb, inn, len);
            let ovb = poisoned();
            let output = import_view(g, &format!("{name}.ov"), &ovb, out, len);
            out_values = Some(ovb);
            SortPayload::Values { input, output }
        }
        Mode::Argsort => {
            let ovb = poisoned();
            let output = import_view(g, &format!("{name}.ov"), &ovb, out, len);
            out_values = Some(ovb);
            SortPayload::SourceRows { output }
        }
    };
    Sort {
        payload,
        policy,
        ..Sort::keys(name, k, ok)
    }
    .add_to_graph_with(g, options)
    .unwrap_or_else(|e| panic!("{name}: {e}"));
    SortCase {
        label: name.to_string(),
        keys,
        key_type,
        options,
        mode,
        out_keys: okb,
        out_values,
        offset: out_offset,
    }
}

/// `None` if equal, else where and how `got` first differs from `want`.
pub fn first_difference(got: &[u32], want: &[u32]) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!("{} rows, want {}", got.len(), want.len()));
    }
    let i = got.iter().zip(want).position(|(a, b)| a != b)?;
    let end = (i + 6).min(got.len());
    Some(format!(
        "first difference at row {i} of {}: got {:x?} want {:x?}",
        got.len(),
        &got[i..end],
        &want[i..end]
    ))
}

/// Checks the outputs of `c` against the oracle: sorted keys (NaNs canonical), values in the
/// stable order, and every poisoned row around the outputs untouched.
pub fn verify_sort(ctx: &GpuContext, c: &SortCase) {
    let n = c.keys.len();
    let rows = |b: &wgpu::Buffer, what: &str| {
        let all = read_buffer(ctx, b);
        assert!(
            all[..c.offset].iter().all(|&x| x == POISON),
            "{}: {what}: rows before the output were written",
            c.label
        );
        assert_eq!(
            &all[c.offset + n..c.offset + n + GUARD],
            &[POISON; GUARD],
            "{}: {what}: rows after the output",
            c.label
        );
        all[c.offset..c.offset + n].to_vec()
    };
    let (order, want_keys) = cpu::sort_typed(&c.keys, c.key_type, c.options);
    if let Some(d) = first_difference(&rows(&c.out_keys, "keys"), &want_keys) {
        panic!("{}: keys: {d}", c.label);
    }
    let want_values: Vec<u32> = match c.mode {
        Mode::Keys => return,
        Mode::Pairs => order.iter().map(|&i| i ^ VALUE_MASK).collect(),
        Mode::Argsort => order,
    };
    let got = rows(c.out_values.as_ref().unwrap(), "values");
    if let Some(d) = first_difference(&got, &want_values) {
        panic!("{}: values (stability): {d}", c.label);
    }
}
