// The span draw's indirect records from the trace frame's (gpu/draw.rs): the frame's are
// instanced ([6, spans, 0, 0], [2, edges, 0, 0]); the viewer draws non-instanced
// ([6 * spans, 1, 0, 0], [2 * edges, 1, 0, 0]).

@group(0) @binding(0) var<storage, read> frame_args: array<u32>;
@group(0) @binding(1) var<storage, read_write> draw_args: array<u32>;

@compute @workgroup_size(1)
fn expand_args() {
    draw_args[0] = frame_args[0] * frame_args[1];
    draw_args[1] = 1u;
    draw_args[2] = 0u;
    draw_args[3] = 0u;
    draw_args[4] = frame_args[4] * frame_args[5];
    draw_args[5] = 1u;
    draw_args[6] = 0u;
    draw_args[7] = 0u;
}
