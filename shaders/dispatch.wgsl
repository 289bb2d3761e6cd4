// Parameters and thread indexing shared by the MSM pipeline stages.
//
// Dispatches are two-dimensional when one dimension would exceed 65535 workgroups; a thread's
// linear index is x + y * (workgroups in x) * WORKGROUP_SIZE.

struct Params {
    // The convert stage converts points first_point .. num_points.
    num_points: u32,
    // Windows W and buckets per window B (signed digits: B = 2^(c-1)).
    num_windows: u32,
    buckets_per_window: u32,
    // W * B: the number of buckets over all windows.
    total_buckets: u32,
    // Bucket reduction splits each window's B buckets into S interleaved segments of
    // run_length = B / S buckets; S = 2^log2_segments.
    segments: u32,
    log2_segments: u32,
    run_length: u32,
    // W * S.
    total_segments: u32,
    // Accumulation chunks (see accumulate.wgsl).
    num_chunks: u32,
    first_point: u32,
    _pad1: u32,
    _pad2: u32,
}

fn thread_index(gid: vec3<u32>, num_workgroups: vec3<u32>) -> u32 {
    return gid.x + gid.y * num_workgroups.x * WORKGROUP_SIZE;
}
