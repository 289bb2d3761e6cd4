// The two ways the stages that read the stored bases (`bases`: sort, accumulate, balanced)
// load one. Bindings are declared by src/gpu/stages.rs.


// Base idx's stored words (the profile's form: BASE_WORDS words, BASE_QUADS loads of 16
// bytes).
fn stored_base(idx: u32) -> BaseWords {
    var w: BaseWords;
    // unroll
    for (var k = 0u; k < BASE_QUADS; k++) {
        let q = quad_words(bases[idx * BASE_QUADS + k]);
        w[4u * k] = q.x;
        w[4u * k + 1u] = q.y;
        w[4u * k + 2u] = q.z;
        w[4u * k + 3u] = q.w;
    }
    return w;
}

// The base a bucket entry adds: point index in bits 0..31, negated when SIGN_BIT is set.
fn entry_base(entry: u32) -> Affine {
    var q = affine_from_words(stored_base(entry & ~SIGN_BIT));
    if ((entry & SIGN_BIT) != 0u) {
        q = affine_neg(q);
    }
    return q;
}
