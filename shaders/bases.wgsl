// How the stages that add stored bases (accumulate, balanced) load one. Bindings (and
// base_quad, part_words) are declared by src/gpu/pipelines/stages.rs.


// The stored words of the base an entry names (the profile's form: BASE_WORDS words,
// BASE_QUADS loads of 16 bytes): in part entry >> PART_SHIFT, at its place in the part
// (part_words, generated with the bindings).
fn stored_base(entry: u32) -> BaseWords {
    return part_words(entry >> PART_SHIFT, (entry & PLACE_MASK) * BASE_QUADS);
}

// The base a bucket entry adds: part and place in bits 0..31, negated when SIGN_BIT is set.
fn entry_base(entry: u32) -> Affine {
    var q = affine_from_words(stored_base(entry & ~SIGN_BIT));
    if ((entry & SIGN_BIT) != 0u) {
        q = affine_neg(q);
    }
    return q;
}
