// BLS12-377 G1 (of the curves the crate implements, the one with a point of order 2) as
// the twisted Edwards curve -x^2 + y^2 = 1 + d x^2 y^2 (the Limbs29Edwards profile), in
// extended coordinates (X : Y : Z : T) with x = X/Z, y = Y/Z, T = X Y / Z.
// src/gpu/shader/edwards.rs derives the map from short Weierstrass, the constants and the step
// tables, and proves that sums of G1 points never meet the formulas' exceptional case.
//
// A base is stored precomputed as Affine (y - x, y + x, k x y) with k = 2d (convert_edwards
// computes it on the device), so a mixed addition costs 7 multiplications; point_add costs
// 9 and point_double 8. The formulas (generated from the step tables) pass every result
// through point_checked: a result with Z = 0 (the exceptional case, reachable only from
// bases outside G1) becomes (0 : 0 : 0 : 0), which every later operation keeps, so the
// host refuses the window sum instead of reading a wrong point.
//
// The identity is (0 : 1 : 1 : 0).

struct Point {
    x: Fp,
    y: Fp,
    z: Fp,
    t: Fp,
}

struct Affine {
    ymx: Fp,
    ypx: Fp,
    kt: Fp,
}

fn point_identity() -> Point {
    return Point(fp_zero(), FP_ONE, FP_ONE, fp_zero());
}

fn point_checked(p: Point) -> Point {
    if (fp_is_zero(p.z)) {
        return Point(fp_zero(), fp_zero(), fp_zero(), fp_zero());
    }
    return p;
}

fn point_neg(p: Point) -> Point {
    return Point(fp_neg(p.x), p.y, p.z, fp_neg(p.t));
}

// -(x, y) = (-x, y): swaps y - x and y + x and negates k x y.
fn affine_neg(p: Affine) -> Affine {
    return Affine(p.ypx, p.ymx, fp_neg(p.kt));
}

// Storage helpers: a point is 4 packed coordinates (POINT_WORDS = 48 u32 words), a
// precomputed base 3 (BASE_WORDS = 36).
fn affine_from_words(w: BaseWords) -> Affine {
    var a: Packed;
    var b: Packed;
    var c: Packed;
    // unroll
    for (var i = 0u; i < PACKED_WORDS; i++) {
        a[i] = w[i];
        b[i] = w[PACKED_WORDS + i];
        c[i] = w[2u * PACKED_WORDS + i];
    }
    return Affine(fp_unpack(a), fp_unpack(b), fp_unpack(c));
}

// The identity is stored as its precomputed form (1, 1, 0), which a mixed addition would add
// exactly; the GPU bucket sort skips it all the same, as the host does.
fn stored_base_is_identity(w: BaseWords) -> bool {
    let one = fp_pack(FP_ONE);
    var differ = 0u;
    // unroll
    for (var i = 0u; i < PACKED_WORDS; i++) {
        differ |= (w[i] ^ one[i]) | (w[PACKED_WORDS + i] ^ one[i]) | w[2u * PACKED_WORDS + i];
    }
    return differ == 0u;
}

fn point_from_words(w: PointWords) -> Point {
    var x: Packed;
    var y: Packed;
    var z: Packed;
    var t: Packed;
    // unroll
    for (var i = 0u; i < PACKED_WORDS; i++) {
        x[i] = w[i];
        y[i] = w[PACKED_WORDS + i];
        z[i] = w[2u * PACKED_WORDS + i];
        t[i] = w[3u * PACKED_WORDS + i];
    }
    return Point(fp_unpack(x), fp_unpack(y), fp_unpack(z), fp_unpack(t));
}

fn point_to_words(p: Point) -> PointWords {
    let x = fp_pack(p.x);
    let y = fp_pack(p.y);
    let z = fp_pack(p.z);
    let t = fp_pack(p.t);
    var w: PointWords;
    // unroll
    for (var i = 0u; i < PACKED_WORDS; i++) {
        w[i] = x[i];
        w[PACKED_WORDS + i] = y[i];
        w[2u * PACKED_WORDS + i] = z[i];
        w[3u * PACKED_WORDS + i] = t[i];
    }
    return w;
}

// The stored (precomputed) form of the affine point (x, y): (y - x, y + x, k x y), as the
// convert stage stores it (the shift stage's copies).
fn stored_words_from_xy(x: Fp, y: Fp) -> BaseWords {
    let a = fp_pack(fp_sub(y, x));
    let b = fp_pack(fp_add(y, x));
    let c = fp_pack(fp_mul(fp_mul(TE_K, x), y));
    var w: BaseWords;
    // unroll
    for (var i = 0u; i < PACKED_WORDS; i++) {
        w[i] = a[i];
        w[PACKED_WORDS + i] = b[i];
        w[2u * PACKED_WORDS + i] = c[i];
    }
    return w;
}
