// accumulate (host-lists path): bucket accumulation (point merging): one thread per chunk adds its points with
// mixed additions; merge.wgsl then merges the chunk sums of each bucket.
//
// The host hands over the entries grouped by bucket (a CSR layout), each entry a point index
// with the digit's sign in bit 31, and cut into chunks of at most the plan's chunk cap
// (<= MAX_CHUNK_ENTRIES) entries of one bucket: chunk k owns
// entries[chunk_offsets[k] .. chunk_offsets[k + 1]]. No two threads write the same output,
// so no atomics are needed, and a hot bucket is spread over many threads. Point indices refer
// to the point array, so points merged on the host (SRE) only need to be appended to it.
//
// Chunk sums are stored limb-major ("structure of arrays"): word i of chunk k sits at
// i * num_chunks + k, so neighbouring threads write neighbouring words.

// Bindings are declared by src/gpu/stages.rs; the bases are read through bases.wgsl.


@compute @workgroup_size(WORKGROUP_SIZE)
fn accumulate(@builtin(global_invocation_id) gid: vec3<u32>,
              @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = thread_index(gid, nwg);
    if (k >= params.num_chunks) {
        return;
    }
    var acc = point_identity();
    let end = chunk_offsets[k + 1u];
    for (var e = chunk_offsets[k]; e < end; e++) {
        acc = point_add_mixed(acc, entry_base(entries[e]));
    }
    let w = point_to_words(acc);
    // unroll
    for (var i = 0u; i < POINT_WORDS; i++) {
        chunk_sums[i * params.num_chunks + k] = w[i];
    }
}
