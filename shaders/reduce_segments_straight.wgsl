// Stage 3 of the wide profile (see reduce.wgsl): the same steps with one straight-line
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
        // Default (the last step): a += acc.
        var x = a;
        var y = acc;
        var dst = 0u; // 0: a, 1: running, 2: acc
        if (step < g.n0) {
            let j = params.run_length - 1u - step / 2u;
            if ((step & 1u) == 0u) {
                x = running;
                y = load_bucket(g.first + j * params.segments);
                dst = 1u;
            } else {
                if (j == 0u) {
                    continue;
                }
                y = running;
            }
        } else if (step < g.n1) {
            y = a;
        } else if (step < g.n2) {
            let i = (step - g.n1) / 2u;
            x = acc;
            dst = 2u;
            if (((step - g.n1) & 1u) == 0u) {
                y = acc;
            } else {
                if (((g.k >> (g.kbits - 1u - i)) & 1u) == 0u) {
                    continue;
                }
                y = running;
            }
        }
        let r = point_add(x, y);
        if (dst == 0u) {
            a = r;
        } else if (dst == 1u) {
            running = r;
        } else {
            acc = r;
        }
    }
    let words = point_to_words(a);
    for (var i = 0u; i < POINT_WORDS; i++) {
        partials[i * params.total_segments + t] = words[i];
    }
}
