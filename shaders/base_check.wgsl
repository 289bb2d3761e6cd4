// The check every uploaded base passes in the convert stage of every profile, before any
// other stage reads it (docs/RELIABILITY.md, "Bases off the curve", says why it catches every
// base off the curve whatever the profile makes of it): the identity (all words zero), or a
// point whose coordinates are reduced below p (each component, on a G2) and satisfy
// y^2 = x^3 + b. The words are the upload's: arkworks' Montgomery form of x, then of y.
// P_PACKED is the modulus in PACKED_WORDS words and CURVE_B is b, a coordinate (Fe) in the
// shaders' form (src/gpu/shader/element.rs).

// Whether component c of a packed coordinate (PACKED_WORDS little-endian words from
// c * PACKED_WORDS) is below p.
fn component_below_p(w: PackedFe, c: u32) -> bool {
    for (var k = PACKED_WORDS; k > 0u; k--) {
        let i = k - 1u;
        let v = w[c * PACKED_WORDS + i];
        if (v != P_PACKED[i]) {
            return v < P_PACKED[i];
        }
    }
    return false;
}

// Whether every component of a packed coordinate is below p.
fn packed_below_p(w: PackedFe) -> bool {
    for (var c = 0u; c < DEGREE; c++) {
        if (!component_below_p(w, c)) {
            return false;
        }
    }
    return true;
}

// Whether the uploaded (x, y) is a base the stages may use.
fn upload_is_valid(x: PackedFe, y: PackedFe) -> bool {
    var any = 0u;
    // unroll
    for (var k = 0u; k < ELEMENT_WORDS; k++) {
        any |= x[k] | y[k];
    }
    if (any == 0u) {
        return true;
    }
    if (!packed_below_p(x) || !packed_below_p(y)) {
        return false;
    }
    let xm = fe_from_arkworks(fe_unpack(x));
    let ym = fe_from_arkworks(fe_unpack(y));
    let rhs = fe_add(fe_mul(fe_square(xm), xm), CURVE_B);
    return fe_is_zero(fe_sub(fe_square(ym), rhs));
}
