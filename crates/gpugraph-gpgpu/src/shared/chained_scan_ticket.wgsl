// The start of a chained scan's `scan_tiles` body (shared/chained_scan.wgsl): the workgroup
// takes a ticket and maps it to its tile (tickets past the chunk's tiles exit), and decides
// which streams of the tile are read and written as vec4.
    if lid == 0u {
        sh_ticket = atomicAdd(&status[0], 1u);
    }
    let ticket = workgroupUniformLoad(&sh_ticket);
    var local_tile = ticket - params.ticket_base;
    if local_tile >= params.tiles {
        return;
    }
#ifdef REVERSE_TILES
    // Testing: tiles start last-first, the schedule that starves a look-back without fallback.
    local_tile = params.tiles - 1u - local_tile;
#endif
    let tile = params.tile_base + local_tile;
    let tile_start = local_tile * TILE_ELEMS;
    let full = params.len - tile_start >= TILE_ELEMS;
    let vector_in = full && (params.input_offset & 3u) == 0u;
    let vector_out = full && (params.output_offset & 3u) == 0u;
    let vector_flags = full && (params.flags_offset & 3u) == 0u;
