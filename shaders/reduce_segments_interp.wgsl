// Stage 3 of the portable profile (see reduce.wgsl): the points live in a small array and
// each step picks its operands and its program (add or double) at run time, so that the
// interpreter runs one program per step.

// Registers of the reduction loop.
const R_RUNNING: u32 = 0u;
const R_A: u32 = 1u;
const R_ACC: u32 = 2u;
const R_BUCKET: u32 = 3u;

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
        var dst = R_A;
        var x = R_A;
        var y = R_ACC;
        var double = false;
        if (step < g.n0) {
            let j = params.run_length - 1u - step / 2u;
            if ((step & 1u) == 0u) {
                pts[R_BUCKET] = load_bucket(g.first + j * params.segments);
                dst = R_RUNNING;
                x = R_RUNNING;
                y = R_BUCKET;
            } else {
                if (j == 0u) {
                    continue;
                }
                y = R_RUNNING;
            }
        } else if (step < g.n1) {
            double = true;
        } else if (step < g.n2) {
            let i = (step - g.n1) / 2u;
            dst = R_ACC;
            x = R_ACC;
            if (((step - g.n1) & 1u) == 0u) {
                double = true;
            } else {
                if (((g.k >> (g.kbits - 1u - i)) & 1u) == 0u) {
                    continue;
                }
                y = R_RUNNING;
            }
        }
        var start = PROG_ADD_START;
        var len = PROG_ADD_LEN;
        if (double) {
            start = PROG_DOUBLE_START;
            len = PROG_DOUBLE_LEN;
        }
        pts[dst] = point_program(pts[x], pts[y], start, len);
    }
    let words = point_to_words(pts[R_A]);
    for (var i = 0u; i < POINT_WORDS; i++) {
        partials[i * params.total_segments + t] = words[i];
    }
}

