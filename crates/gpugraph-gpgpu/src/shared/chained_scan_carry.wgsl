// After shared/chained_scan_tile.wgsl: looks back and publishes the tile's inclusive prefix.
// Leaves `carry` (the sum of everything before the tile back to the last segment start) for
// the kernel's epilogue.
    var carry = 0u;
    if workgroupUniformLoad(&sh_need_lookback) != 0u {
#ifdef SUBGROUP_LOOKBACK
        carry = look_back_subgroup(lid, sg_lane, sg_id);
#else
        carry = look_back(lid);
#endif
    }
    if lid == 0u {
        let aggregate = sh_tile_aggregate;
        if aggregate.x == 0u && !sequence_start(tile) {
            publish(tile, TILE_INCLUSIVE, carry + aggregate.y);
        }
    }

