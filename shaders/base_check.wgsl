// The check every uploaded base passes in the convert stage of every profile, before any
// other stage reads it (docs/RELIABILITY.md, "Bases off the curve", says why it catches every
// base off the curve whatever the profile makes of it): the identity (all words zero), or a
// point whose coordinates are reduced below p and satisfy y^2 = x^3 + b. The words are the
// upload's: arkworks' Montgomery form of x, then of y. P_PACKED is the modulus in PACKED_WORDS words
// and CURVE_B is b in the shaders' form.

// Whether a packed value (12 little-endian words) is below p.
fn packed_below_p(w: Packed) -> bool {
    for (var k = PACKED_WORDS; k > 0u; k--) {
        let i = k - 1u;
        if (w[i] != P_PACKED[i]) {
            return w[i] < P_PACKED[i];
        }
    }
    return false;
}

// Whether the uploaded (x, y) is a base the stages may use.
fn upload_is_valid(x: Packed, y: Packed) -> bool {
    var any = 0u;
    // unroll
    for (var k = 0u; k < PACKED_WORDS; k++) {
        any |= x[k] | y[k];
    }
    if (any == 0u) {
        return true;
    }
    if (!packed_below_p(x) || !packed_below_p(y)) {
        return false;
    }
    let xm = fp_from_arkworks(fp_unpack(x));
    let ym = fp_from_arkworks(fp_unpack(y));
    let rhs = fp_add(fp_mul(fp_square(xm), xm), CURVE_B);
    return fp_is_zero(fp_sub(fp_square(ym), rhs));
}
