// The curve y^2 = x^3 + b (b from arkworks: on the G1s BLS12-377 1, BN254 3, BLS12-381 4;
// on the G2s an element of F_p^2), in homogeneous projective coordinates (x = X/Z,
// y = Y/Z) over the coordinates' field Fe (F_p on a G1, F_p^2 on a G2: element_fp*.wgsl).
//
// The formulas are the complete ones of Renes, Costello and Batina (EUROCRYPT 2016,
// algorithms 7, 8 and 9 for a = 0). They have no branches and no exceptional cases for the
// identity, P + P or P + (-P), as long as P - Q is never a point of order 2. BLS12-377's curve
// has such points, (-1, 0) among them, but they lie outside the prime-order subgroup G1, and
// every point the engine adds is a sum of G1 points, so P - Q is in G1 and the case never
// arises; BN254's and BLS12-381's curves have no point of order 2 at all, and neither has
// any of the three G2 twists (odd cofactors: src/gpu/shader/edwards.rs, has_two_torsion).
//
// The formulas are not in this file: the host takes them from one table of steps
// (src/gpu/shader/program.rs) and either generates them as straight-line WGSL functions (the wide
// profile: no run-time-indexed array, nothing picked at run time) or prepends
// curve_interp.wgsl, an interpreter of the table over a register file (the portable profile:
// drivers inline every function, and the interpreter keeps one copy of fe_mul per call site,
// which keeps compile times low on the software adapter). Either way they define
// point_add (12M), point_add_mixed (11M) and point_double (8M) on a G1 (on a G2 14, 13 and 9
// products of F_p^2: two more by 3b an addition, one more a doubling); each multiplication by
// b3 = 3b is an addition chain on the G1s (b3 = 3: two additions; 9 and 12: four) and a
// multiplication by CURVE_B3 on the G2s.
//
// The identity is (0 : 1 : 0). An affine point (Z = 1) cannot be the identity: the host never
// hands the shaders an identity base.

struct Point {
    x: Fe,
    y: Fe,
    z: Fe,
}

struct Affine {
    x: Fe,
    y: Fe,
}

fn point_identity() -> Point {
    return Point(fe_zero(), FE_ONE, fe_zero());
}

fn point_neg(p: Point) -> Point {
    return Point(p.x, fe_neg(p.y), p.z);
}

fn affine_neg(p: Affine) -> Affine {
    return Affine(p.x, fe_neg(p.y));
}

// Storage helpers: a point is 3 packed coordinates of ELEMENT_WORDS words (POINT_WORDS u32
// words), an affine point 2 (BASE_WORDS).
fn affine_from_words(w: BaseWords) -> Affine {
    var x: PackedFe;
    var y: PackedFe;
    // unroll
    for (var i = 0u; i < ELEMENT_WORDS; i++) {
        x[i] = w[i];
        y[i] = w[ELEMENT_WORDS + i];
    }
    return Affine(fe_unpack(x), fe_unpack(y));
}

// A stored base of all zeros is the identity ((0, 0) is not on the curve); the mixed addition
// must never see it, so the GPU bucket sort places nothing for it.
fn stored_base_is_identity(w: BaseWords) -> bool {
    var acc = 0u;
    // unroll
    for (var i = 0u; i < BASE_WORDS; i++) {
        acc |= w[i];
    }
    return acc == 0u;
}

fn point_from_words(w: PointWords) -> Point {
    var x: PackedFe;
    var y: PackedFe;
    var z: PackedFe;
    // unroll
    for (var i = 0u; i < ELEMENT_WORDS; i++) {
        x[i] = w[i];
        y[i] = w[ELEMENT_WORDS + i];
        z[i] = w[2u * ELEMENT_WORDS + i];
    }
    return Point(fe_unpack(x), fe_unpack(y), fe_unpack(z));
}

fn point_to_words(p: Point) -> PointWords {
    let x = fe_pack(p.x);
    let y = fe_pack(p.y);
    let z = fe_pack(p.z);
    var w: PointWords;
    // unroll
    for (var i = 0u; i < ELEMENT_WORDS; i++) {
        w[i] = x[i];
        w[ELEMENT_WORDS + i] = y[i];
        w[2u * ELEMENT_WORDS + i] = z[i];
    }
    return w;
}

// The stored form of the affine point (x, y) (the shift stage's copies).
fn stored_words_from_xy(x: Fe, y: Fe) -> BaseWords {
    let px = fe_pack(x);
    let py = fe_pack(y);
    var w: BaseWords;
    // unroll
    for (var i = 0u; i < ELEMENT_WORDS; i++) {
        w[i] = px[i];
        w[ELEMENT_WORDS + i] = py[i];
    }
    return w;
}
