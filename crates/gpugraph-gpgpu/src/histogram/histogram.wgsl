// Histogram bin keys, assembled after keyed/keyed.wgsl (which supplies `params`, `KEYS`,
// `NO_KEY` and `edge_at`): UNIFORM_KEY selects equal-width bins, else sorted edges.

fn row_key(x: KeyIn) -> u32 {
#ifdef UNIFORM_KEY
    return uniform_key(x);
#else
    return edge_key(x);
#endif
}

// Equal-width bins over [lo, hi], hi included: key_f0 = (lo, hi, scale = bins / (hi - lo)).
// The bin is floor((x - lo) * scale) in float32 (a subtraction and a multiplication, each
// correctly rounded, so the CPU oracle reproduces it bit for bit); values that round to the
// last bin's upper edge or beyond, up to hi, land in the last bin.
fn uniform_key(x: f32) -> u32 {
    let lo = params.key_f0.x;
    let hi = params.key_f0.y;
    if (!(x >= lo && x <= hi)) {
        return NO_KEY;
    }
    let y = floor((x - lo) * params.key_f0.z);
    if (y >= f32(KEYS)) {
        return KEYS - 1u;
    }
    return u32(y);
}

// Sorted edges e[0..=KEYS]: bin i holds [e[i], e[i+1]), the last bin also holds e[KEYS].
// Binary search for the largest i < KEYS with e[i] <= x.
fn edge_key(x: f32) -> u32 {
    let last = params.edge_count - 1u;
    if (!(x >= edge_at(0u) && x <= edge_at(last))) {
        return NO_KEY;
    }
    var lo = 0u;
    var hi = last;
    while (hi - lo > 1u) {
        let mid = (lo + hi) / 2u;
        if (x >= edge_at(mid)) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}
