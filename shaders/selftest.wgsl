// Self-test kernel: evaluates one field or curve function per thread so that the host can
// compare it with arkworks. The function is the pipeline-overridable constant SELFTEST_OP, so
// each function gets its own pipeline and the driver compiles only that function (the
// straight-line formulas make one kernel with all of them slow to compile). Each case reads
// SELFTEST_IN_WORDS words (operand a: POINT_WORDS words, operand b: POINT_WORDS words, a small
// integer k) and writes POINT_WORDS words. Field operands are coordinates (Fe: F_p on a G1,
// F_p^2 on a G2) in the first ELEMENT_WORDS words of a and b; the mixed addition's affine
// operand is the first BASE_WORDS words of b.
// base_check.wgsl is prepended (case 14 runs its check).

override SELFTEST_OP: u32 = 0u;



const SELFTEST_IN_WORDS: u32 = 2u * POINT_WORDS + 1u;

fn in_point(case_base: u32, which: u32) -> Point {
    var w: PointWords;
    for (var k = 0u; k < POINT_WORDS; k++) {
        w[k] = input[case_base + which * POINT_WORDS + k];
    }
    return point_from_words(w);
}

fn in_fe(case_base: u32, which: u32) -> Fe {
    var w: PackedFe;
    for (var k = 0u; k < ELEMENT_WORDS; k++) {
        w[k] = input[case_base + which * POINT_WORDS + k];
    }
    return fe_unpack(w);
}

fn fe_result(a: Fe) -> PointWords {
    var out: PointWords;
    let w = fe_pack(a);
    for (var k = 0u; k < ELEMENT_WORDS; k++) {
        out[k] = w[k];
    }
    return out;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn selftest(@builtin(global_invocation_id) gid: vec3<u32>,
            @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(gid, nwg);
    if (i >= tparams.count) {
        return;
    }
    let base = i * SELFTEST_IN_WORDS;
    let k = input[base + 2u * POINT_WORDS];
    var out: PointWords;
    switch SELFTEST_OP {
        case 0u: { out = fe_result(fe_add(in_fe(base, 0u), in_fe(base, 1u))); }
        case 1u: { out = fe_result(fe_sub(in_fe(base, 0u), in_fe(base, 1u))); }
        case 2u: { out = fe_result(fe_mul(in_fe(base, 0u), in_fe(base, 1u))); }
        case 3u: { out = fe_result(fe_neg(in_fe(base, 0u))); }
        case 4u: { out = fe_result(fe_from_arkworks(in_fe(base, 0u))); }
        case 5u: { out = fe_result(fe_square(in_fe(base, 0u))); }
        case 6u: {
            // k chained multiplications: a <- a * b, k times.
            var a = in_fe(base, 0u);
            let b = in_fe(base, 1u);
            for (var j = 0u; j < k; j++) {
                a = fe_mul(a, b);
            }
            out = fe_result(a);
        }
        case 7u: { out = point_to_words(point_add(in_point(base, 0u), in_point(base, 1u))); }
        case 8u: {
            var q: BaseWords;
            for (var w = 0u; w < BASE_WORDS; w++) {
                q[w] = input[base + POINT_WORDS + w];
            }
            out = point_to_words(point_add_mixed(in_point(base, 0u), affine_from_words(q)));
        }
        case 9u: { out = point_to_words(point_double(in_point(base, 0u))); }
        case 10u: { out = point_to_words(point_neg(in_point(base, 0u))); }
        case 11u: { out = point_to_words(point_mul_small(in_point(base, 0u), k)); }
        case 12u: { out = point_to_words(point_identity()); }
        case 13u: { out = fe_result(fe_inverse(in_fe(base, 0u))); }
        case 14u: {
            // The convert stage's check of an uploaded base: a's first ELEMENT_WORDS words are x, b's y.
            var x: PackedFe;
            var y: PackedFe;
            for (var w = 0u; w < ELEMENT_WORDS; w++) {
                x[w] = input[base + w];
                y[w] = input[base + POINT_WORDS + w];
            }
            out[0] = select(0u, 1u, upload_is_valid(x, y));
        }
        default: { out = fe_result(in_fe(base, 0u)); }
    }
    for (var w = 0u; w < POINT_WORDS; w++) {
        output[i * POINT_WORDS + w] = out[w];
    }
}
