// Candidate ranges over `n` source rows (shared by the indexed-range kernels and mirrored by
// compact::cpu::clamp_range): [start, end) is clamped to start' = min(start, n),
// end' = clamp(end, start', n). A range is invalid when end < start, or when it is non-empty
// and reaches past n; invalid ranges are clamped and counted, never trusted.

fn clamped_range(start: u32, end: u32, n: u32) -> vec2<u32> {
    let s = min(start, n);
    return vec2<u32>(s, clamp(end, s, n));
}

fn range_invalid(start: u32, end: u32, n: u32) -> bool {
    return end < start || (end > start && end > n);
}
