// reduce_segments of the Limbs32 profiles (see reduce.wgsl): the same steps with one straight-line
// point addition per step, its operands and destination chosen by branches on the step, so
// that no array of points is indexed at run time and no formula is picked at run time.
// Doublings are additions P + P (the formulas are complete): 12 multiplications instead of
// 8, on log2(S) + bits(s + 1) of the 2J + log2(S) + 2 bits(s + 1) steps.

@compute @workgroup_size(WORKGROUP_SIZE)
fn reduce_segments(@builtin(global_invocation_id) gid: vec3<u32>,
                   @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = thread_index(gid, nwg);
    if (t >= params.total_segments) {
        return;
    }
    let g = segment(t);
    var running = point_identity();
    var a = point_identity();
    var acc = point_identity();
    for (var step = 0u; step <= g.n2; step++) {
        let st = segment_step(g, step);
        if (st.skip) {
            continue;
        }
        var x = a;
        if (st.x == P_RUNNING) {
            x = running;
        } else if (st.x == P_ACC) {
            x = acc;
        }
        var y = a;
        if (st.load) {
            y = load_bucket(st.bucket);
        } else if (st.y == P_RUNNING) {
            y = running;
        } else if (st.y == P_ACC) {
            y = acc;
        }
        let r = point_add(x, y);
        if (st.dst == P_A) {
            a = r;
        } else if (st.dst == P_RUNNING) {
            running = r;
        } else {
            acc = r;
        }
    }
    let words = point_to_words(a);
    // unroll
    for (var i = 0u; i < POINT_WORDS; i++) {
        partials[i * params.total_segments + t] = words[i];
    }
}
