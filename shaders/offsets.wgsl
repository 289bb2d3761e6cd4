// Bucket offsets from the levels of the prefix sum (scan.wgsl), for the stages after it:
// level 0 holds each bucket's offset within its block of SCAN_BLOCK counts, level i the
// offset of block g / SCAN_BLOCK^i within its own block, and the top level is one block. A
// bucket's offset is the sum of its value on each level (params.scan_levels of them, level i
// from params.scan_base_i). The offset of bucket W B (the extra count) is the entry count.

fn bucket_offset(g: u32) -> u32 {
    var o = offsets[g];
    if (params.scan_levels > 1u) {
        let g1 = g / SCAN_BLOCK;
        o += offsets[params.scan_base1 + g1];
        if (params.scan_levels > 2u) {
            let g2 = g1 / SCAN_BLOCK;
            o += offsets[params.scan_base2 + g2];
            if (params.scan_levels > 3u) {
                o += offsets[params.scan_base3 + g2 / SCAN_BLOCK];
            }
        }
    }
    return o;
}

// Whether buckets a .. b (b excluded) have no entry.
fn range_is_empty(a: u32, b: u32) -> bool {
    return bucket_offset(a) == bucket_offset(b);
}
