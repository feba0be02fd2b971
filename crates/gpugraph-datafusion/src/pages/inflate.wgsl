// Decompresses Snappy-compressed Parquet pages into a column's byte region: one invocation
// per page (`inflate.rs`'s `Inflate`), walking the page's elements in order. The oracle is
// `inflate_cpu` (the `snap` crate's decoder).
//
// Snappy (github.com/google/snappy, format_description.txt): a varint of the uncompressed
// length, then elements whose tag's low two bits say: 0 a literal (length - 1 in the upper
// six bits, or in the next 1-4 bytes when those say 60-63), 1 a copy of 4-11 bytes from an
// 11-bit offset, 2 a copy of 1-64 bytes from a 16-bit offset, 3 the same from a 32-bit
// offset. A copy's offset may be shorter than its length: the bytes it copies repeat.
//
// One invocation a workgroup: the walk diverges at every element, and a warp of one page
// runs its own branches instead of waiting on 31 others'.
//
// The walk is flat: each step emits one byte, reading an element's header first when the
// last one is spent, and the loop runs sixteen steps an iteration. lavapipe (llvmpipe) ends
// every loop of a shader after 65,535 iterations counted together; nested loops over an
// element's bytes stopped pages there after some 60 KiB. Sixteen steps an iteration take a
// page of up to MAX_BYTES (the host sends no longer one) within that count.
//
// Output bytes collect in a word that is stored when full; the last four stored words stay
// in registers too, since most copies of plain integers reach back a value or two (TPC-H's
// 64-bit prices are three bytes and a run of zeros): those bytes come from registers instead
// of a load of what this invocation stored a moment ago.

struct Inflate {
    // Byte offset of the compressed page in `packed`.
    src: u32,
    // Its compressed bytes.
    src_len: u32,
    // Byte offset (4-aligned) of its output in `region`.
    dst: u32,
    // Its uncompressed bytes (a multiple of 4); the stream must say the same.
    dst_len: u32,
}

@group(0) @binding(0) var<storage, read> tasks: array<Inflate>;
@group(0) @binding(1) var<storage, read> packed: array<u32>;
@group(0) @binding(2) var<storage, read_write> region: array<u32>;
// Word 0 bit 1: a page's stream is not valid Snappy of its stated length (a corrupt file).
@group(0) @binding(3) var<storage, read_write> status: array<atomic<u32>>;

const CORRUPT: u32 = 2u;
// Longest page the walk inflates (`inflate.rs`'s `MAX_BYTES`): 16 steps an iteration, and
// 65,000 iterations leave lavapipe's limit room for the preamble.
const MAX_BYTES: u32 = 1040000u;

var<private> dst_word: u32;
// Output bytes so far.
var<private> pos: u32;
// The word being filled (its low pos % 4 bytes).
var<private> pend: u32;
// The last four stored words, h0 the latest.
var<private> h0: u32;
var<private> h1: u32;
var<private> h2: u32;
var<private> h3: u32;

fn in_byte(i: u32) -> u32 {
    return (packed[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu;
}

fn put(b: u32) {
    pend |= b << ((pos & 3u) * 8u);
    pos += 1u;
    if ((pos & 3u) == 0u) {
        region[dst_word + (pos >> 2u) - 1u] = pend;
        h3 = h2;
        h2 = h1;
        h1 = h0;
        h0 = pend;
        pend = 0u;
    }
}

// Output byte p (< pos).
fn out_byte(p: u32) -> u32 {
    let shift = (p & 3u) * 8u;
    let back = (pos >> 2u) - (p >> 2u);
    var w: u32;
    if (back == 0u) {
        w = pend;
    } else if (back == 1u) {
        w = h0;
    } else if (back == 2u) {
        w = h1;
    } else if (back == 3u) {
        w = h2;
    } else if (back == 4u) {
        w = h3;
    } else {
        w = region[dst_word + (p >> 2u)];
    }
    return (w >> shift) & 0xffu;
}

// `n` (1 ..= 4) little-endian bytes at `at`, without a loop (see above).
fn in_le(at: u32, n: u32) -> u32 {
    var v = in_byte(at);
    if (n > 1u) {
        v |= in_byte(at + 1u) << 8u;
    }
    if (n > 2u) {
        v |= in_byte(at + 2u) << 16u;
    }
    if (n > 3u) {
        v |= in_byte(at + 3u) << 24u;
    }
    return v;
}

fn fail() {
    atomicOr(&status[0], CORRUPT);
}

var<private> ip: u32;
var<private> end: u32;
// The stream's stated length.
var<private> len: u32;
// Bytes left of the current element, which copies from `offset` bytes back or is a literal
// at `ip`.
var<private> left: u32;
var<private> copying: bool;
var<private> offset: u32;
var<private> done: bool;

// Reads the element header at `ip`; false when it is corrupt or runs past the page.
fn header() -> bool {
    if (ip >= end) {
        return false;
    }
    let tag = in_byte(ip);
    ip += 1u;
    let kind = tag & 3u;
    if (kind == 0u) {
        var n = tag >> 2u;
        if (n >= 60u) {
            let extra = n - 59u;
            if (extra > end - ip) {
                return false;
            }
            n = in_le(ip, extra);
            ip += extra;
        }
        // n + 1 bytes, without wrapping.
        if (n >= end - ip || n >= len - pos) {
            return false;
        }
        left = n + 1u;
        copying = false;
        return true;
    }
    var n: u32;
    var back: u32;
    if (kind == 1u) {
        if (ip >= end) {
            return false;
        }
        n = 4u + ((tag >> 2u) & 7u);
        back = ((tag >> 5u) << 8u) | in_byte(ip);
        ip += 1u;
    } else {
        let bytes = select(4u, 2u, kind == 2u);
        if (bytes > end - ip) {
            return false;
        }
        n = 1u + (tag >> 2u);
        back = in_le(ip, bytes);
        ip += bytes;
    }
    if (back == 0u || back > pos || n > len - pos) {
        return false;
    }
    left = n;
    copying = true;
    offset = back;
    return true;
}

// One byte of the walk (see above).
fn step() {
    if (done) {
        return;
    }
    if (left == 0u) {
        if (pos == len) {
            if (ip != end) {
                fail();
            }
            done = true;
            return;
        }
        if (!header()) {
            fail();
            done = true;
            return;
        }
    }
    if (copying) {
        put(out_byte(pos - offset));
    } else {
        put(in_byte(ip));
        ip += 1u;
    }
    left -= 1u;
}

@compute @workgroup_size(1)
fn inflate(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let t = gid.x + gid.y * groups.x;
    if (t >= arrayLength(&tasks)) {
        return;
    }
    let task = tasks[t];
    end = task.src + task.src_len;
    dst_word = task.dst >> 2u;
    pos = 0u;
    pend = 0u;
    // The preamble: the uncompressed length as a varint of at most 5 bytes.
    ip = task.src;
    len = 0u;
    for (var k = 0u; k < 5u; k++) {
        if (ip >= end) {
            fail();
            return;
        }
        let b = in_byte(ip);
        ip += 1u;
        len |= (b & 0x7fu) << (7u * k);
        if ((b & 0x80u) == 0u) {
            break;
        }
        if (k == 4u) {
            fail();
            return;
        }
    }
    if (len != task.dst_len || len > MAX_BYTES) {
        fail();
        return;
    }
    left = 0u;
    done = false;
    loop {
        if (done) {
            break;
        }
        step(); step(); step(); step(); step(); step(); step(); step();
        step(); step(); step(); step(); step(); step(); step(); step();
    }
}
