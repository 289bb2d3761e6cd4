// merge (host-lists path): chunk sums merged into bucket sums, one level per dispatch.
//
// A level reads `inputs` partial sums (the chunk sums, or the previous level's outputs) and
// writes one sum per group: group g adds inputs groups[group_base + g] .. [group_base + g + 1],
// at most MERGE_FANIN of them, all of one bucket. The host plans the levels (MergePlan in
// src/digits/) so that the last one has exactly one group per bucket and writes the bucket
// sums, and a bucket cut into many chunks is merged as a tree: no thread adds more than the
// fan-in, whatever the scalars. Sums are stored limb-major: word i of item k of a buffer of
// `count` items sits at i * count + k.


@compute @workgroup_size(WORKGROUP_SIZE)
fn merge(@builtin(global_invocation_id) gid: vec3<u32>,
         @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = thread_index(gid, nwg);
    if (g >= mparams.num_groups) {
        return;
    }
    var acc = point_identity();
    let end = groups[mparams.group_base + g + 1u];
    for (var k = groups[mparams.group_base + g]; k < end; k++) {
        var w: PointWords;
        // unroll
        for (var i = 0u; i < POINT_WORDS; i++) {
            w[i] = merge_in[i * mparams.num_inputs + k];
        }
        acc = point_add(acc, point_from_words(w));
    }
    let w = point_to_words(acc);
    // unroll
    for (var i = 0u; i < POINT_WORDS; i++) {
        merge_out[i * mparams.num_groups + g] = w[i];
    }
}
