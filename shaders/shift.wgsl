// shift: one shifted copy of a resident part (src/config/load.rs, Precompute), in place in
// the part's buffer, which holds the copies one after another (num_points bases each):
// copy `copy` of base i becomes 2^doublings times copy `copy - 1` of it. Run once per copy
// when the set is loaded (src/gpu/resident.rs), never by a call. Bindings are declared by
// src/gpu/stages.rs.
//
// Each thread takes SHIFT_BATCH consecutive bases: it doubles each (the profile's
// point_double), keeps X and Y in the destination slot and Z in a private array, then
// shares one inversion by Fermat among them (Montgomery's trick) and stores each in the
// profile's stored form (stored_words_from_xy). A stored identity is copied as it is. A
// result with Z = 0, x = 0 or y = 0 is stored as zeros and sets the status word to that
// base's index, and the host stores the set without copies, so that no call ever adds such
// a copy. No multiple of a point of the prime-order subgroup (G1 or G2) other than the
// identity has one of them (x = 0 or y = 0 is a point of order 2, 3 or 4 in either model,
// and a copy of a non-identity base of the subgroup is never the identity), so a set of
// such bases never falls back; what they catch are bases of small order outside it: in short Weierstrass the identity (Z = 0) and the
// points of order 2 (y = 0), which the complete formulas would add with an exceptional
// case; in the Edwards model its exceptional case (Z = 0, or x = y = 0 once poisoned), its
// identity (0, 1) and the points of order 2 and 4. A Z of 0 counts as 1 in the products.

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

// Coordinate c (0: x, 1: y) of slot idx, raw.
fn shift_coord(idx: u32, c: u32) -> Fe {
    var w: PackedFe;
    // unroll
    for (var k = 0u; k < ELEMENT_WORDS; k++) {
        w[k] = bases[idx * BASE_WORDS + c * ELEMENT_WORDS + k];
    }
    return fe_unpack(w);
}

fn shift_store_coord(idx: u32, c: u32, v: Fe) {
    let w = fe_pack(v);
    // unroll
    for (var k = 0u; k < ELEMENT_WORDS; k++) {
        bases[idx * BASE_WORDS + c * ELEMENT_WORDS + k] = w[k];
    }
}

fn shift_degenerate(dst: u32, i: u32) {
    shift_store(dst, BaseWords());
    atomicMax(&status[STATUS_BAD_BASE], bad_base_marker(i));
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn shift(@builtin(global_invocation_id) gid: vec3<u32>,
         @builtin(num_workgroups) nwg: vec3<u32>) {
    let n = sparams.num_points;
    let first = thread_index(gid, nwg) * SHIFT_BATCH;
    if (first >= n || sparams.copy == 0u) {
        return;
    }
    let end = min(first + SHIFT_BATCH, n);
    let source = (sparams.copy - 1u) * n;
    let to = sparams.copy * n;
    var zs: array<Fe, SHIFT_BATCH>;
    var before: array<Fe, SHIFT_BATCH>;
    var acc = FE_ONE;
    for (var i = first; i < end; i++) {
        let src = shift_load(source + i);
        if (stored_base_is_identity(src)) {
            continue;
        }
        var p = point_add_mixed(point_identity(), affine_from_words(src));
        for (var d = 0u; d < sparams.doublings; d++) {
            p = point_double(p);
        }
        shift_store_coord(to + i, 0u, p.x);
        shift_store_coord(to + i, 1u, p.y);
        zs[i - first] = p.z;
        before[i - first] = acc;
        if (!fe_is_zero(p.z)) {
            acc = fe_mul(acc, p.z);
        }
    }
    var inv = fe_inverse(acc);
    for (var i = end; i > first; i--) {
        let j = i - 1u;
        let src = shift_load(source + j);
        if (stored_base_is_identity(src)) {
            shift_store(to + j, src);
            continue;
        }
        let z = zs[j - first];
        if (fe_is_zero(z)) {
            shift_degenerate(to + j, j);
            continue;
        }
        let zi = fe_mul(inv, before[j - first]);
        inv = fe_mul(inv, z);
        let x = fe_mul(shift_coord(to + j, 0u), zi);
        let y = fe_mul(shift_coord(to + j, 1u), zi);
        if (fe_is_zero(x) || fe_is_zero(y)) {
            shift_degenerate(to + j, j);
            continue;
        }
        shift_store(to + j, stored_words_from_xy(x, y));
    }
}
