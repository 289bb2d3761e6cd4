// convert, Edwards profile: bases first_point .. num_points, in place, from arkworks'
// affine (x, y) (words 0..24 of each BASE_WORDS = 36-word slot) to the precomputed form
// (y' - x', y' + x', k x' y') that the mixed addition reads.
//
// x' = c (x + 1) / y and y' = (u - 1) / (u + 1) with u = s (x + 1) (src/gpu/shader/edwards.rs):
// one inversion of Z = y (u + 1) per point. Each thread converts CONVERT_BATCH consecutive
// points with one inversion (Montgomery's trick): the prefix products of the Z's go into
// the slots' spare words (24..36), one inversion by Fermat (a^(p-2)), then a backward pass.
// The identity (uploaded as zeros) becomes its precomputed form (1, 1, 0). A point the map
// cannot send (Z = 0: y = 0, or u = -1, orders 2 and 4, never in G1) becomes (0, 0, 0), the
// poisoned form (see edwards.rs). Both count as 1 in the products.
//
// Before anything else, every uploaded point passes the check of base_check.wgsl on its
// arkworks (x, y): a point off the curve can map to an Edwards point that the formulas add
// exactly (x = -1 gives (0, -1), of order 2), so its image says nothing; a base that fails
// sets the call's status word (check_upload) and the host refuses the call.
//
// The Edwards profile runs on BLS12-377 G1 only (src/curve.rs): coordinates in F_p, so Fe is
// Fp and ELEMENT_WORDS is PACKED_WORDS here, and this file and curve_edwards.wgsl compute
// with fp_* directly.


fn load_coord(i: u32, c: u32) -> Fp {
    return fp_unpack(upload_coord(i, c));
}

fn store_coord(i: u32, c: u32, v: Fp) {
    let w = fp_pack(v);
    // unroll
    for (var k = 0u; k < PACKED_WORDS; k++) {
        bases[i * BASE_WORDS + c * PACKED_WORDS + k] = w[k];
    }
}

// x' = nx / z and y' = ny / z.
struct MapParts {
    nx: Fp,
    ny: Fp,
    z: Fp,
}

fn map_parts(i: u32) -> MapParts {
    let x = fp_from_arkworks(load_coord(i, 0u));
    let y = fp_from_arkworks(load_coord(i, 1u));
    let x1 = fp_add(x, MAP_NEG_ALPHA);
    let u = fp_mul(MAP_S, x1);
    let up1 = fp_add(u, FP_ONE);
    let um1 = fp_sub(u, FP_ONE);
    return MapParts(fp_mul(fp_mul(MAP_C, x1), up1), fp_mul(um1, y), fp_mul(y, up1));
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn convert(@builtin(global_invocation_id) gid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = thread_index(gid, nwg);
    let span = params.num_points - params.first_point;
    if (t >= (span + CONVERT_BATCH - 1u) / CONVERT_BATCH) {
        return;
    }
    let first = params.first_point + t * CONVERT_BATCH;
    let end = min(first + CONVERT_BATCH, params.num_points);
    var acc = FP_ONE;
    for (var i = first; i < end; i++) {
        check_upload(i, upload_coord(i, 0u), upload_coord(i, 1u));
        store_coord(i, 2u, acc);
        let z = map_parts(i).z;
        if (!fp_is_zero(z)) {
            acc = fp_mul(acc, z);
        }
    }
    var inv = fp_inverse(acc);
    for (var i = end; i > first; i--) {
        let j = i - 1u;
        let m = map_parts(j);
        if (fp_is_zero(m.z)) {
            var one = fp_zero();
            if (fp_is_zero(load_coord(j, 0u)) && fp_is_zero(load_coord(j, 1u))) {
                one = FP_ONE;
            }
            store_coord(j, 0u, one);
            store_coord(j, 1u, one);
            store_coord(j, 2u, fp_zero());
            continue;
        }
        let zi = fp_mul(inv, load_coord(j, 2u));
        inv = fp_mul(inv, m.z);
        let x = fp_mul(m.nx, zi);
        let y = fp_mul(m.ny, zi);
        store_coord(j, 0u, fp_sub(y, x));
        store_coord(j, 1u, fp_add(y, x));
        store_coord(j, 2u, fp_mul(fp_mul(TE_K, x), y));
    }
}
