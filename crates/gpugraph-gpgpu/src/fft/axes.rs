//! How a transform decomposes into passes ([`Axis`]): one per axis up to the one-pass
//! length, a four-step pair past it, three passes past its square (rows only), with the
//! addressing of each pass's sequences.

use super::plan::Layout;

/// One axis transform before buffers are assigned.
pub(super) struct Axis {
    pub(super) length: u32,
    pub(super) seqs: u32,
    pub(super) inner: u32,
    pub(super) outer_count: u32,
    pub(super) input: Layout,
    pub(super) output: Layout,
    pub(super) twiddle: Option<(u32, bool)>,
    /// Complex elements per workgroup (the policy's, or its column passes').
    pub(super) elements: u32,
}

impl Axis {
    /// One level of groups, the same layout in and out.
    fn in_place(length: u32, seqs: u32, inner: u32, layout: Layout, elements: u32) -> Self {
        Self {
            length,
            seqs,
            inner,
            outer_count: 0,
            input: layout,
            output: layout,
            twiddle: None,
            elements,
        }
    }
    fn twiddled(self, n: u32, outer: bool) -> Self {
        Self {
            twiddle: Some((n, outer)),
            ..self
        }
    }
}

fn split(n: u32) -> (u32, u32) {
    let lg = n.trailing_zeros();
    let n1 = 1u32 << lg.div_ceil(2);
    (n1, n / n1)
}

/// Transforms of contiguous rows: `batch` rows of length `n`, at most `max` per pass.
pub(super) fn row_axes(n: u32, batch: u32, max: u32, elements: u32, out: &mut Vec<Axis>) {
    if n <= max {
        out.push(Axis::in_place(n, batch, 1, Layout::new(0, n, 1), elements));
        return;
    }
    if u64::from(n) <= u64::from(max) * u64::from(max) {
        // Four-step: each row as an n1 × n2 matrix; columns (stride n2), twiddle by column,
        // then rows written transposed so X[k1 + n1·k2] lands in natural order.
        let (n1, n2) = split(n);
        let strided = Layout::new(1, n, n2);
        out.push(Axis::in_place(n1, batch * n2, n2, strided, elements).twiddled(n, false));
        out.push(Axis {
            input: Layout::new(n2, n, 1),
            output: Layout::new(1, n, n1),
            ..Axis::in_place(n2, batch * n1, n1, strided, elements)
        });
        return;
    }
    // Three passes, n = a · b · c, j = j1·(b·c) + j2, k = k1 + a·k2: length-a sub-transforms
    // (stride b·c) twiddled by W_n^{j2·k1} leave row k1 (length b·c, contiguous) to be
    // transformed into X[k1 + a·k2]; that row transform is itself a four-step pair, the
    // strided half in place and the contiguous half written at k1 + a·(kb + b·kc), a
    // three-level sequence index (row, k1, kb).
    let a = 1u32 << n.trailing_zeros().div_ceil(3);
    let m = n / a;
    let (b, c) = split(m);
    let first = Layout::new(1, n, m);
    out.push(Axis::in_place(a, batch * m, m, first, elements).twiddled(n, false));
    let second = Layout::new(1, m, c);
    out.push(Axis::in_place(b, batch * a * c, c, second, elements).twiddled(m, false));
    out.push(Axis {
        outer_count: a,
        input: Layout::grouped(c, m, 1, n),
        output: Layout::grouped(a, 1, a * b, n),
        ..Axis::in_place(c, batch * a * b, b, second, elements)
    });
}

/// Transforms of the `w` columns (length `h`) of a row-major `h × w` matrix, at most `max`
/// per pass; `first` is [`FftPolicy::column_split`].
pub(super) fn column_axes(
    h: u32,
    w: u32,
    max: u32,
    first: u32,
    elements: u32,
    out: &mut Vec<Axis>,
) {
    if h <= max {
        out.push(Axis::in_place(h, w, w, Layout::new(1, 0, w), elements));
        return;
    }
    let (h1, h2) = match first {
        0 => split(h),
        f => {
            // h ≤ max², so h / max ≤ min(max, h / 2): the range is never empty.
            let h1 = f.clamp(h / max, max.min(h / 2));
            (h1, h / h1)
        }
    };
    let strided = Layout::new(1, w, h2 * w);
    out.push(Axis::in_place(h1, w * h2, w, strided, elements).twiddled(h, true));
    out.push(Axis {
        input: Layout::new(1, h2 * w, w),
        output: Layout::new(1, w, h1 * w),
        ..Axis::in_place(h2, w * h1, w, strided, elements)
    });
}
