// The middle of a chained scan's `scan_tiles` body, after shared/chained_scan_ticket.wgsl:
// loads the tile (x: values, s: segment starts, r: per-vec4 inclusive scans, pairs: their
// exclusive slot prefixes) and publishes its aggregate. shared/chained_scan_carry.wgsl
// follows (a kernel may issue loads of its own between the two, so their latency overlaps
// the look-back).
#ifdef LIVE_COUNT
    live_len = min(live_words[params.live_offset], params.len);
#endif

    // The invocation's position in tile order. With full subgroups it follows the subgroup
    // layout, so subgroup scans run in tile order whatever the driver's lane mapping.
    var tid = lid;
    var use_subgroups = false;
#ifdef SUBGROUPS
    if sg_count * sg_size == WG_SIZE {
        use_subgroups = true;
        tid = sg_id * sg_size + sg_lane;
    }
#endif

    var x: array<vec4<u32>, VEC4_PER_THREAD>;
    var s: array<vec4<u32>, VEC4_PER_THREAD>;
    var r: array<vec4<u32>, VEC4_PER_THREAD>;
    var pairs: array<vec2<u32>, VEC4_PER_THREAD>;
#unroll
    for (var i = 0u; i < VEC4_PER_THREAD; i += 1u) {
        let e = tile_start + 4u * (i * WG_SIZE + tid);
        x[i] = load_values(e, vector_in);
        s[i] = load_starts(e, vector_flags, sequence_start(tile));
        r[i] = scan_vec4(x[i], s[i]);
        pairs[i] = vec4_pair(r[i], s[i]);
    }
    if tid == 0u {
        sh_first_start = s[0].x;
    }

#ifdef SUBGROUPS
    if use_subgroups {
        slot_prefixes_subgroup(sg_lane, sg_size, sg_id, sg_count, &pairs);
    } else {
        slot_prefixes_shared(tid, &pairs);
    }
#else
    slot_prefixes_shared(tid, &pairs);
#endif

    // Publish the aggregate (or the inclusive prefix when it needs no predecessor) and decide
    // whether a look-back is needed: not when the tile's first element starts a segment.
    if lid == 0u {
        let aggregate = sh_tile_aggregate;
        let closed = aggregate.x != 0u || sequence_start(tile);
        publish(tile, published_state(closed), aggregate.y);
        let first_start = sh_first_start != 0u || sequence_start(tile);
        sh_need_lookback = select(1u, 0u, first_start);
        lb_next = tile - 1u;
        lb_carry = 0u;
        lb_spins = 0u;
    }
