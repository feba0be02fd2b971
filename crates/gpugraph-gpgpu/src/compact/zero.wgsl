// Writes 0 into up to three result words (counts, overflow flags, invalid-range counts) when
// there is nothing to compact: the "tiny count-clearing pass" that replaces a zero-sized scan.
// Words may sit inside larger buffers (an indirect draw record): params[0] = number of
// targets, params[1 + k] = element offset of target k inside binding k + 1.

@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read_write> word_0: array<u32>;
@group(0) @binding(2) var<storage, read_write> word_1: array<u32>;
@group(0) @binding(3) var<storage, read_write> word_2: array<u32>;

@compute @workgroup_size(1)
fn zero_words() {
    let n = params[0];
    if (n > 0u) {
        word_0[params[1]] = 0u;
    }
    if (n > 1u) {
        word_1[params[2]] = 0u;
    }
    if (n > 2u) {
        word_2[params[3]] = 0u;
    }
}
