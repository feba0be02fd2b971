// device.bound over a count with no stated capacity: the recorded list runs the count clamped
// to the room its recording allocated, and raises the guard word when the count outgrew it.
struct Params { room: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> count: array<u32>;
@group(0) @binding(2) var<storage, read_write> clamped: array<u32>;
@group(0) @binding(3) var<storage, read_write> guard: array<u32>;

@compute @workgroup_size(1)
fn main() {
    let c = count[0];
    clamped[0] = min(c, params.room);
    // The guard holds the true count so the next cook can size the new room from it.
    guard[0] = select(0u, 1u, c > params.room);
    guard[1] = c;
}
