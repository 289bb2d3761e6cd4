// Exclusive prefix sum of the bucket counts, in levels (the host plans them from the bucket
// count alone): scan_blocks scans blocks of SCAN_BLOCK = WORKGROUP_SIZE * SCAN_RUN values in
// place and writes each block's total into the next level's section; the top level (one
// block) writes its total, the entry count, after its values. All levels live in one buffer
// at offsets the level gives. Nothing adds the totals back: a bucket's offset is the sum of
// one value a level (bucket_offset in offsets.wgsl), which saves a pass over the counts.

var<workgroup> lane_sums: array<u32, WORKGROUP_SIZE>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn scan_blocks(@builtin(workgroup_id) wid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lane: u32) {
    let block = workgroup_index(wid, nwg);
    let first = block * SCAN_BLOCK + lane * SCAN_RUN;
    var sum = 0u;
    for (var j = 0u; j < SCAN_RUN; j++) {
        if (first + j < level.count_in) {
            sum += scan[level.in_base + first + j];
        }
    }
    lane_sums[lane] = sum;
    workgroupBarrier();
    // Inclusive scan of the lanes' sums (Hillis-Steele).
    for (var d = 1u; d < WORKGROUP_SIZE; d <<= 1u) {
        var v = 0u;
        if (lane >= d) {
            v = lane_sums[lane - d];
        }
        workgroupBarrier();
        lane_sums[lane] += v;
        workgroupBarrier();
    }
    var run = lane_sums[lane] - sum;
    for (var j = 0u; j < SCAN_RUN; j++) {
        if (first + j < level.count_in) {
            let x = scan[level.in_base + first + j];
            scan[level.in_base + first + j] = run;
            run += x;
        }
    }
    if (lane == WORKGROUP_SIZE - 1u && block < level.count_out) {
        scan[level.out_base + block] = lane_sums[lane];
    }
}
