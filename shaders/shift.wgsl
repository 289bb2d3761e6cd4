// shift: one shifted copy of a resident part (src/config/load.rs, Precompute), in place in
// the part's buffer, which holds the copies one after another (num_points bases each):
// copy `copy` of base i becomes 2^doublings times copy `copy - 1` of it. Run once per copy
// when the set is loaded (src/gpu/resident.rs), never by a call. Bindings are declared by
// src/gpu/stages.rs.
//
// Each thread takes one base and doubles it (the profile's point_double); the workgroup's
// threads share one inversion by Fermat (Montgomery's trick across the workgroup): two scans
// of products in workgroup memory give each thread the product of the Z before its own and
// the product of those after it, every thread inverts the workgroup's product (a wave runs
// one inversion whatever its lanes do: one inversion a wave), and each stores its point in
// the profile's stored form (stored_words_from_xy). Nothing is indexed at run time in
// private memory: a batch of Z values a thread, an array, lived in registers and spilled
// on RDNA2 (docs/PERF.md, "The shaders as a GPU compiler sees them").
//
// A stored identity is copied as it is. A result with Z = 0, x = 0 or y = 0 is stored as
// zeros and sets the status word to that base's index, and the host stores the set without
// copies, so that no call ever adds such a copy. No multiple of a point of the prime-order
// subgroup (G1 or G2) other than the identity has one of them (x = 0 or y = 0 is a point
// of order 2, 3 or 4 in either model, and a copy of a non-identity base of the subgroup is
// never the identity), so a set of such bases never falls back; what they catch are bases
// of small order outside it: in short Weierstrass the identity (Z = 0) and the points of
// order 2 (y = 0), which the complete formulas would add with an exceptional case; in the
// Edwards model its exceptional case (Z = 0, or x = y = 0 once poisoned), its identity
// (0, 1) and the points of order 2 and 4. A Z of 0 counts as 1 in the products.

fn shift_load(idx: u32) -> BaseWords {
    var w: BaseWords;
    // unroll
    for (var k = 0u; k < BASE_WORDS; k++) {
        w[k] = bases[idx * BASE_WORDS + k];
    }
    return w;
}

fn shift_store(idx: u32, w: BaseWords) {
    // unroll
    for (var k = 0u; k < BASE_WORDS; k++) {
        bases[idx * BASE_WORDS + k] = w[k];
    }
}

fn shift_degenerate(dst: u32, i: u32) {
    shift_store(dst, BaseWords());
    atomicMax(&status[STATUS_BAD_BASE], bad_base_marker(i));
}

// Products of the workgroup's Z values, one a lane (the scans' workgroup memory).
var<workgroup> shift_scan: array<PackedFe, WORKGROUP_SIZE>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn shift(@builtin(global_invocation_id) gid: vec3<u32>,
         @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_index) lane: u32) {
    let n = sparams.num_points;
    if (sparams.copy == 0u) {
        return;
    }
    let i = thread_index(gid, nwg);
    let to = sparams.copy * n + i;
    // Every lane runs the scans' barriers; one without a base (i >= n), or with the stored
    // identity, brings Z = 1 and stores nothing of its own.
    var src = BaseWords();
    var doubled = false;
    var p = point_identity();
    var z = FE_ONE;
    if (i < n) {
        src = shift_load((sparams.copy - 1u) * n + i);
        if (!stored_base_is_identity(src)) {
            doubled = true;
            p = point_add_mixed(point_identity(), affine_from_words(src));
            for (var d = 0u; d < sparams.doublings; d++) {
                p = point_double(p);
            }
            if (!fe_is_zero(p.z)) {
                z = p.z;
            }
        }
    }
    // Inclusive scans of the products, the first over the lanes below, the second over the
    // lanes above (one loop: one product in it). Between them each lane keeps the product of
    // the Z below its own, and the workgroup's.
    var acc = z;
    var before = FE_ONE;
    var total = FE_ONE;
    shift_scan[lane] = fe_pack(acc);
    for (var step = 0u; step < 2u * SHIFT_SCAN_STEPS; step++) {
        let above = step >= SHIFT_SCAN_STEPS;
        if (step == SHIFT_SCAN_STEPS) {
            workgroupBarrier();
            if (lane > 0u) {
                before = fe_unpack(shift_scan[lane - 1u]);
            }
            total = fe_unpack(shift_scan[WORKGROUP_SIZE - 1u]);
            workgroupBarrier();
            acc = z;
            shift_scan[lane] = fe_pack(acc);
        }
        let d = 1u << (step % SHIFT_SCAN_STEPS);
        workgroupBarrier();
        var other = FE_ONE;
        if (!above && lane >= d) {
            other = fe_unpack(shift_scan[lane - d]);
        } else if (above && lane + d < WORKGROUP_SIZE) {
            other = fe_unpack(shift_scan[lane + d]);
        }
        workgroupBarrier();
        acc = fe_mul(acc, other);
        shift_scan[lane] = fe_pack(acc);
    }
    workgroupBarrier();
    var after = FE_ONE;
    if (lane + 1u < WORKGROUP_SIZE) {
        after = fe_unpack(shift_scan[lane + 1u]);
    }
    let inv = fe_inverse(total);
    if (i >= n) {
        return;
    }
    if (!doubled) {
        shift_store(to, src);
        return;
    }
    if (fe_is_zero(p.z)) {
        shift_degenerate(to, i);
        return;
    }
    let zi = fe_mul(fe_mul(inv, before), after);
    let x = fe_mul(p.x, zi);
    let y = fe_mul(p.y, zi);
    if (fe_is_zero(x) || fe_is_zero(y)) {
        shift_degenerate(to, i);
        return;
    }
    shift_store(to, stored_words_from_xy(x, y));
}
