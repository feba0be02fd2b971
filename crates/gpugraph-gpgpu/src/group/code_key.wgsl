// Group codes are the keys (keyed.wgsl ignores codes >= KEYS).
fn row_key(x: KeyIn) -> u32 {
    return x;
}
