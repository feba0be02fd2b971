//! Test support: the layout naga gives a WGSL struct, so each GPUScene kernel's tests can pin
//! its Rust uniform struct to the shader's (a drifted member would read the wrong word).

/// The byte size of struct `name` in `wgsl` and its members' byte offsets.
pub(crate) fn struct_layout(wgsl: &str, name: &str) -> (usize, Vec<u32>) {
    let module = naga::front::wgsl::parse_str(wgsl).expect("the kernel's WGSL parses");
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).expect("layout");
    let (h, t) = module
        .types
        .iter()
        .find(|(_, t)| t.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no struct {name} in the WGSL"));
    let naga::TypeInner::Struct { members, .. } = &t.inner else {
        panic!("{name} is a struct")
    };
    (
        layouter[h].size as usize,
        members.iter().map(|m| m.offset).collect(),
    )
}

/// Offsets of `n` consecutive 4-byte members.
pub(crate) fn packed_words(n: u32) -> Vec<u32> {
    (0..n).map(|i| i * 4).collect()
}
