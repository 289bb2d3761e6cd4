// Stage 2: bucket accumulation (point merging).
//
// The host hands over the entries grouped by bucket (a CSR layout): bucket g owns
// entries[offsets[g] .. offsets[g + 1]], each entry a point index with the digit's sign in
// bit 31. One thread owns one bucket and adds its points with mixed additions, so no two
// threads ever write the same bucket and no atomics are needed. Point indices refer to the
// point array, so points merged on the host (SRE) only need to be appended to that array.
//
// Buckets are stored limb-major ("structure of arrays"): word k of bucket g sits at
// k * total_buckets + g, so neighbouring threads write neighbouring words.

@group(0) @binding(0) var<storage, read> points: array<u32>;
@group(0) @binding(1) var<storage, read> offsets: array<u32>;
@group(0) @binding(2) var<storage, read> entries: array<u32>;
@group(0) @binding(3) var<storage, read_write> buckets: array<u32>;
@group(0) @binding(4) var<uniform> params: Params;

const SIGN_BIT: u32 = 0x80000000u;

fn load_affine(idx: u32) -> Affine {
    let base = idx * AFFINE_WORDS;
    var x: Packed;
    var y: Packed;
    for (var k = 0u; k < PACKED_WORDS; k++) {
        x[k] = points[base + k];
        y[k] = points[base + PACKED_WORDS + k];
    }
    return Affine(fp_unpack(x), fp_unpack(y));
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn accumulate(@builtin(global_invocation_id) gid: vec3<u32>,
              @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = thread_index(gid, nwg);
    if (g >= params.total_buckets) {
        return;
    }
    var acc = point_identity();
    let end = offsets[g + 1u];
    for (var e = offsets[g]; e < end; e++) {
        let entry = entries[e];
        var q = load_affine(entry & ~SIGN_BIT);
        if ((entry & SIGN_BIT) != 0u) {
            q = affine_neg(q);
        }
        acc = point_add_mixed(acc, q);
    }
    let w = point_to_words(acc);
    for (var k = 0u; k < POINT_WORDS; k++) {
        buckets[k * params.total_buckets + g] = w[k];
    }
}
