// reduce_segments of the Limbs13 profile (see reduce.wgsl): the points live in a small array and
// each step picks its operands and its program (add or double) at run time, so that the
// interpreter runs one program per step.

@compute @workgroup_size(WORKGROUP_SIZE)
fn reduce_segments(@builtin(global_invocation_id) gid: vec3<u32>,
                   @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = thread_index(gid, nwg);
    if (t >= params.total_segments) {
        return;
    }
    let g = segment(t);
    var pts: array<Point, 4>;
    for (var r = 0u; r < 4u; r++) {
        pts[r] = point_identity();
    }
    for (var step = 0u; step <= g.n2; step++) {
        let st = segment_step(g, step);
        if (st.skip) {
            continue;
        }
        if (st.load) {
            pts[P_BUCKET] = load_bucket(st.bucket);
        }
        var start = PROG_ADD_START;
        var len = PROG_ADD_LEN;
        if (st.double) {
            start = PROG_DOUBLE_START;
            len = PROG_DOUBLE_LEN;
        }
        pts[st.dst] = point_program(pts[st.x], pts[st.y], start, len);
    }
    let words = point_to_words(pts[P_A]);
    // unroll
    for (var i = 0u; i < POINT_WORDS; i++) {
        partials[i * params.total_segments + t] = words[i];
    }
}

